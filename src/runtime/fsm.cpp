#include "daqflow/runtime/fsm.hpp"

#include <string>

namespace daqflow::runtime {

namespace {

char lower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

}  // namespace

const char* to_string(State state) {
  switch (state) {
    case State::Halted:
      return "Halted";
    case State::Configuring:
      return "Configuring";
    case State::Ready:
      return "Ready";
    case State::Enabling:
      return "Enabling";
    case State::Enabled:
      return "Enabled";
    case State::Suspending:
      return "Suspending";
    case State::Suspended:
      return "Suspended";
    case State::Resuming:
      return "Resuming";
    case State::Halting:
      return "Halting";
    case State::Failed:
      return "Failed";
  }
  return "?";
}

const char* to_string(Command command) {
  switch (command) {
    case Command::Configure:
      return "Configure";
    case Command::Enable:
      return "Enable";
    case Command::Suspend:
      return "Suspend";
    case Command::Resume:
      return "Resume";
    case Command::Halt:
      return "Halt";
    case Command::Reset:
      return "Reset";
  }
  return "?";
}

Result<State> parse_state(std::string_view name) {
  for (const State s : kAllStates) {
    if (name == to_string(s)) return s;
  }
  std::string valid;
  for (const State s : kAllStates) valid += (valid.empty() ? "" : ", ") + std::string(to_string(s));
  return Error("unknown state '" + std::string(name) + "' (expected one of " + valid + ")");
}

Result<Command> parse_command(std::string_view name) {
  for (const Command c : kAllCommands) {
    if (iequals(name, to_string(c))) return c;
  }
  std::string valid;
  for (const Command c : kAllCommands)
    valid += (valid.empty() ? "" : ", ") + std::string(to_string(c));
  return Error("unknown command '" + std::string(name) + "' (expected one of " + valid + ")");
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
