// The application state machine of docs/control-api.md, checked for every (state, command) pair.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <utility>

#include "daqflow/runtime/fsm.hpp"

namespace daqflow::runtime {
namespace {

using S = State;
using C = Command;

// The whole table, written out independently of the implementation: every pair not listed here
// must be refused.
const std::map<std::pair<S, C>, Transition>& expected_table() {
  static const std::map<std::pair<S, C>, Transition> table = {
      {{S::Halted, C::Configure}, {S::Configuring, S::Ready}},
      {{S::Ready, C::Enable}, {S::Enabling, S::Enabled}},
      {{S::Enabled, C::Suspend}, {S::Suspending, S::Suspended}},
      {{S::Suspended, C::Resume}, {S::Resuming, S::Enabled}},
      {{S::Ready, C::Halt}, {S::Halting, S::Halted}},
      {{S::Enabled, C::Halt}, {S::Halting, S::Halted}},
      {{S::Suspended, C::Halt}, {S::Halting, S::Halted}},
      {{S::Failed, C::Reset}, {S::Halted, S::Halted}},
  };
  return table;
}

TEST(Fsm, EveryStateAndCommandFollowsTheTable) {
  int allowed = 0;
  for (const S s : kAllStates) {
    for (const C c : kAllCommands) {
      const auto it = expected_table().find({s, c});
      const auto got = transition(s, c);
      if (it == expected_table().end()) {
        EXPECT_FALSE(got.has_value()) << to_string(c) << " must be refused in " << to_string(s);
      } else {
        ASSERT_TRUE(got.has_value()) << to_string(c) << " must be allowed in " << to_string(s);
        EXPECT_EQ(*got, it->second) << to_string(c) << " from " << to_string(s);
        ++allowed;
      }
    }
  }
  EXPECT_EQ(allowed, 8);
}

TEST(Fsm, FailedIsLeftOnlyByReset) {
  for (const C c : kAllCommands) {
    EXPECT_EQ(transition(S::Failed, c).has_value(), c == C::Reset) << to_string(c);
  }
}

TEST(Fsm, TransitionalStatesAcceptNoCommand) {
  for (const S s : kAllStates) {
    if (!is_transitional(s)) continue;
    for (const C c : kAllCommands)
      EXPECT_FALSE(transition(s, c)) << to_string(s) << " " << to_string(c);
  }
}

TEST(Fsm, TransitionalStatesAreTheFiveIngStates) {
  for (const S s : kAllStates) {
    const bool ing = s == S::Configuring || s == S::Enabling || s == S::Suspending ||
                     s == S::Resuming || s == S::Halting;
    EXPECT_EQ(is_transitional(s), ing) << to_string(s);
  }
}

TEST(Fsm, EveryAllowedTransitionEndsInTheCommandsTargetState) {
  for (const S s : kAllStates) {
    for (const C c : kAllCommands) {
      if (const auto t = transition(s, c)) {
        EXPECT_EQ(t->target, target_state(c)) << to_string(s) << " " << to_string(c);
        EXPECT_FALSE(is_transitional(t->target));
      }
    }
  }
}

TEST(Fsm, EveryStateButFailedCanFail) {
  for (const S s : kAllStates) EXPECT_EQ(can_fail(s), s != S::Failed) << to_string(s);
}

TEST(Fsm, NamesRoundTrip) {
  for (const S s : kAllStates) {
    const auto parsed = parse_state(to_string(s));
    ASSERT_TRUE(parsed.ok()) << to_string(s);
    EXPECT_EQ(*parsed, s);
  }
  for (const C c : kAllCommands) {
    const auto parsed = parse_command(to_string(c));
    ASSERT_TRUE(parsed.ok()) << to_string(c);
    EXPECT_EQ(*parsed, c);
  }
}

TEST(Fsm, CommandsParseIgnoringCase) {
  EXPECT_EQ(*parse_command("configure"), C::Configure);
  EXPECT_EQ(*parse_command("HALT"), C::Halt);
  EXPECT_EQ(*parse_command("rEsEt"), C::Reset);
}

TEST(Fsm, UnknownNamesAreErrorsListingTheValidOnes) {
  const auto cmd = parse_command("Start");
  ASSERT_FALSE(cmd.ok());
  EXPECT_NE(cmd.error().message().find("'Start'"), std::string::npos);
  EXPECT_NE(cmd.error().message().find("Configure, Enable, Suspend, Resume, Halt, Reset"),
            std::string::npos);
  EXPECT_FALSE(parse_command("").ok());
  EXPECT_FALSE(parse_command("Configured").ok());

  const auto state = parse_state("halted");  // states are exact: they are what the API answers
  ASSERT_FALSE(state.ok());
  EXPECT_NE(state.error().message().find("Halted"), std::string::npos);
}

TEST(Fsm, ARunWalksTheMachine) {
  S s = S::Halted;
  for (const C c : {C::Configure, C::Enable, C::Suspend, C::Resume, C::Halt}) {
    const auto t = transition(s, c);
    ASSERT_TRUE(t) << to_string(c) << " from " << to_string(s);
    EXPECT_TRUE(is_transitional(t->during));
    s = t->target;
  }
  EXPECT_EQ(s, S::Halted);
}

}  // namespace
}  // namespace daqflow::runtime
