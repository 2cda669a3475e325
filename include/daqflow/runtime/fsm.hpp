#pragma once
// The state machine of one application (docs/control-api.md), as a pure table.
//
//   Halted    --Configure--> Configuring --> Ready
//   Ready     --Enable-->    Enabling    --> Enabled
//   Enabled   --Suspend-->   Suspending  --> Suspended
//   Suspended --Resume-->    Resuming    --> Enabled
//   Ready | Enabled | Suspended --Halt--> Halting --> Halted
//   any state except Failed --error--> Failed(reason)
//   Failed    --Reset-->     Halted (no transitional state: the failure already released it)
//
// Failed is left only by Reset, so that a failure is never hidden by a later Halt. The executive
// enters the transitional state when it accepts a command and the target state (or Failed) when
// the application's hook has run.

#include <optional>
#include <string_view>

#include "daqflow/core/result.hpp"

namespace daqflow::runtime {

enum class State {
  Halted,
  Configuring,
  Ready,
  Enabling,
  Enabled,
  Suspending,
  Suspended,
  Resuming,
  Halting,
  Failed,
};

enum class Command { Configure, Enable, Suspend, Resume, Halt, Reset };

inline constexpr State kAllStates[] = {
    State::Halted,     State::Configuring, State::Ready,    State::Enabling, State::Enabled,
    State::Suspending, State::Suspended,   State::Resuming, State::Halting,  State::Failed};
inline constexpr Command kAllCommands[] = {Command::Configure, Command::Enable, Command::Suspend,
                                           Command::Resume,    Command::Halt,   Command::Reset};

[[nodiscard]] const char* to_string(State state);
[[nodiscard]] const char* to_string(Command command);
// Exact names as above; the error lists the valid ones.
[[nodiscard]] Result<State> parse_state(std::string_view name);
// Command names are matched ignoring case ("configure" is Configure); the error lists them.
[[nodiscard]] Result<Command> parse_command(std::string_view name);

// What accepting a command does: the state entered at once, and the state reached when the
// transition has run. For Reset both are Halted.
struct Transition {
  State during;
  State target;
  friend bool operator==(const Transition&, const Transition&) = default;
};

// The transition for command in state from, or nothing when the command is not allowed there.
[[nodiscard]] std::optional<Transition> transition(State from, Command command);

// The stable state a command leads to: Ready, Enabled, Suspended, Enabled, Halted, Halted.
[[nodiscard]] State target_state(Command command);

// Configuring, Enabling, Suspending, Resuming, Halting: states the machine leaves on its own.
[[nodiscard]] bool is_transitional(State state);
// Whether an error may move the state machine to Failed (every state but Failed itself, which
// keeps its first reason).
[[nodiscard]] bool can_fail(State state);

}  // namespace daqflow::runtime
