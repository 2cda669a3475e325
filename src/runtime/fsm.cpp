#include "daqflow/runtime/fsm.hpp"

#include <string>

#include "daqflow/core/enum_names.hpp"

namespace daqflow::runtime {

namespace {

constexpr auto kStateNames = core::enum_names<State>({{State::Halted, "Halted"},
                                                      {State::Configuring, "Configuring"},
                                                      {State::Ready, "Ready"},
                                                      {State::Enabling, "Enabling"},
                                                      {State::Enabled, "Enabled"},
                                                      {State::Suspending, "Suspending"},
                                                      {State::Suspended, "Suspended"},
                                                      {State::Resuming, "Resuming"},
                                                      {State::Halting, "Halting"},
                                                      {State::Failed, "Failed"}});
constexpr auto kCommandNames = core::enum_names<Command>({{Command::Configure, "Configure"},
                                                          {Command::Enable, "Enable"},
                                                          {Command::Suspend, "Suspend"},
                                                          {Command::Resume, "Resume"},
                                                          {Command::Halt, "Halt"},
                                                          {Command::Reset, "Reset"}});

}  // namespace

const char* to_string(State state) {
  return kStateNames.name(state);
}

const char* to_string(Command command) {
  return kCommandNames.name(command);
}

Result<State> parse_state(std::string_view name) {
  if (const auto s = kStateNames.parse(name)) return *s;
  return Error("unknown state '" + std::string(name) + "' (expected one of " +
               kStateNames.list(", ") + ")");
}

Result<Command> parse_command(std::string_view name) {
  if (const auto c = kCommandNames.parse(name, /*ignore_case=*/true)) return *c;
  return Error("unknown command '" + std::string(name) + "' (expected one of " +
               kCommandNames.list(", ") + ")");
}

std::optional<Transition> transition(State from, Command command) {
  switch (command) {
    case Command::Configure:
      if (from == State::Halted) return Transition{State::Configuring, State::Ready};
      break;
    case Command::Enable:
      if (from == State::Ready) return Transition{State::Enabling, State::Enabled};
      break;
    case Command::Suspend:
      if (from == State::Enabled) return Transition{State::Suspending, State::Suspended};
      break;
    case Command::Resume:
      if (from == State::Suspended) return Transition{State::Resuming, State::Enabled};
      break;
    case Command::Halt:
      if (from == State::Ready || from == State::Enabled || from == State::Suspended) {
        return Transition{State::Halting, State::Halted};
      }
      break;
    case Command::Reset:
      if (from == State::Failed) return Transition{State::Halted, State::Halted};
      break;
  }
  return std::nullopt;
}

State target_state(Command command) {
  switch (command) {
    case Command::Configure:
      return State::Ready;
    case Command::Enable:
      return State::Enabled;
    case Command::Suspend:
      return State::Suspended;
    case Command::Resume:
      return State::Enabled;
    case Command::Halt:
      return State::Halted;
    case Command::Reset:
      return State::Halted;
  }
  return State::Halted;
}

bool is_transitional(State state) {
  return state == State::Configuring || state == State::Enabling || state == State::Suspending ||
         state == State::Resuming || state == State::Halting;
}

bool can_fail(State state) {
  return state != State::Failed;
}

}  // namespace daqflow::runtime
