// The restart policy as a run carries it out (control/restarts.hpp), on a scripted run: back-off
// doubling per attempt and capped, max_restarts, each phase's deadline, an application that
// fails while being configured, a process that dies again, and the whole way back to Enabled.

#include <gtest/gtest.h>

#include <set>

#include "control/restarts.hpp"

namespace daqflow::control {
namespace {

using std::chrono::milliseconds;
using Clock = Restarts::Clock;

class ScriptedRun final : public RestartHost {
 public:
  [[nodiscard]] bool alive(const std::string& context) const override {
    return alive_.contains(context);
  }
  [[nodiscard]] std::vector<std::string> group_of(const std::string& context) const override {
    if (context == "ru1" || context == "ru1b") return {"ru1", "ru1b"};
    return {context};
  }
  [[nodiscard]] Result<void> start_again(const std::string& context) override {
    starts.push_back(context);
    if (refuse_start) return Error("ssh: connection refused");
    alive_.insert(context);
    return ok();
  }
  [[nodiscard]] bool answers(const std::string& /*context*/) override { return port_up; }
  [[nodiscard]] Result<void> send_configure(const std::vector<std::string>& group) override {
    configured.push_back(group);
    return ok();
  }
  [[nodiscard]] Result<bool> reached(const std::vector<std::string>& /*group*/,
                                     runtime::State target) override {
    if (!failure.empty()) return Error(failure);
    return target == runtime::State::Ready ? ready : enabled;
  }
  [[nodiscard]] Result<void> send_enable(const std::vector<std::string>& group) override {
    enables.push_back(group);
    return ok();
  }
  void kill(const std::string& context) override {
    kills.push_back(context);
    alive_.erase(context);
  }
  void note(const std::string& text) override { notes.push_back(text); }

  void dies(const std::string& context) { alive_.erase(context); }
  [[nodiscard]] bool noted(const std::string& part) const {
    for (const auto& n : notes) {
      if (n.find(part) != std::string::npos) return true;
    }
    return false;
  }

  bool refuse_start = false;
  bool port_up = false;
  bool ready = false;
  bool enabled = false;
  std::string failure;
  std::vector<std::string> starts;
  std::vector<std::vector<std::string>> configured;
  std::vector<std::vector<std::string>> enables;
  std::vector<std::string> kills;
  std::vector<std::string> notes;

 private:
  std::set<std::string> alive_;
};

runtime::RestartPolicy on_failure(std::uint32_t max_restarts = 3) {
  runtime::RestartPolicy p;
  p.on_failure = true;
  p.backoff_ms = 100;
  p.max_backoff_ms = 300;
  p.max_restarts = max_restarts;
  return p;
}

const RestartTimeouts kTimeouts{milliseconds(1000), milliseconds(2000), milliseconds(3000)};

TEST(Restarts, NoneWithoutThePolicyOrAfterACleanEnd) {
  ScriptedRun run;
  Restarts restarts(run, kTimeouts);
  const auto t0 = Clock::now();
  restarts.schedule("ru1", runtime::RestartPolicy{}, false, t0);
  restarts.schedule("ru1", on_failure(), /*clean=*/true, t0);
  EXPECT_TRUE(restarts.empty());
  EXPECT_TRUE(restarts.step(t0 + std::chrono::hours(1)).empty());
  EXPECT_TRUE(run.starts.empty());
}

TEST(Restarts, StartsAfterItsBackOffAndRejoinsOnceEnabled) {
  ScriptedRun run;
  Restarts restarts(run, kTimeouts);
  const auto t0 = Clock::now();
  restarts.schedule("ru1", on_failure(), false, t0);
  EXPECT_TRUE(run.noted("context ru1: restart 1 of 3 in 100 ms (restart: on-failure)"));
  EXPECT_TRUE(restarts.restarting("ru1"));
  EXPECT_TRUE(restarts.restarting("ru1b"));  // the same process
  EXPECT_FALSE(restarts.restarting("bu0"));

  restarts.step(t0 + milliseconds(99));
  EXPECT_TRUE(run.starts.empty());
  restarts.step(t0 + milliseconds(100));
  ASSERT_EQ(run.starts, std::vector<std::string>{"ru1"});

  restarts.step(t0 + milliseconds(150));  // the port does not answer yet
  EXPECT_TRUE(run.configured.empty());
  run.port_up = true;
  restarts.step(t0 + milliseconds(200));
  ASSERT_EQ(run.configured.size(), 1u);
  EXPECT_EQ(run.configured[0], (std::vector<std::string>{"ru1", "ru1b"}));

  restarts.step(t0 + milliseconds(250));  // not Ready yet
  EXPECT_TRUE(run.enables.empty());
  run.ready = true;
  restarts.step(t0 + milliseconds(300));
  ASSERT_EQ(run.enables.size(), 1u);

  run.enabled = true;
  const auto rejoined = restarts.step(t0 + milliseconds(350));
  ASSERT_EQ(rejoined,
            std::vector<std::string>{"context ru1 restarted (1 of 3) and rejoins the run"});
  EXPECT_TRUE(restarts.empty());
  EXPECT_EQ(restarts.attempts("ru1"), 1u);
  EXPECT_TRUE(run.kills.empty());
}

TEST(Restarts, AFailedAttemptEndsTheProcessAndBacksOffTwiceAsLongUpToTheCap) {
  ScriptedRun run;
  Restarts restarts(run, kTimeouts);
  auto now = Clock::now();
  restarts.schedule("bu0", on_failure(5), false, now);
  now += milliseconds(100);
  restarts.step(now);  // started; its port never answers
  ASSERT_EQ(run.starts.size(), 1u);
  restarts.step(now + milliseconds(999));
  EXPECT_TRUE(run.kills.empty());
  now += milliseconds(1000);
  restarts.step(now);
  EXPECT_TRUE(
      run.noted("restarting context bu0 failed: its control port did not answer within 1 s"));
  EXPECT_EQ(run.kills, std::vector<std::string>{"bu0"});
  EXPECT_TRUE(run.noted("context bu0: restart 2 of 5 in 200 ms"));

  restarts.step(now + milliseconds(199));
  EXPECT_EQ(run.starts.size(), 1u);
  now += milliseconds(200);
  restarts.step(now);
  EXPECT_EQ(run.starts.size(), 2u);
  now += milliseconds(1000);
  restarts.step(now);
  EXPECT_TRUE(run.noted("context bu0: restart 3 of 5 in 300 ms"));  // 400, capped at 300
}

TEST(Restarts, GivesUpAfterMaxRestarts) {
  ScriptedRun run;
  run.refuse_start = true;
  Restarts restarts(run, kTimeouts);
  auto now = Clock::now();
  restarts.schedule("bu0", on_failure(2), false, now);
  for (int i = 0; i < 4; ++i) {
    now += milliseconds(1000);
    restarts.step(now);
  }
  EXPECT_EQ(run.starts.size(), 2u);
  EXPECT_TRUE(run.noted("restarting context bu0 failed: ssh: connection refused"));
  EXPECT_TRUE(
      run.noted("context bu0 was started again 2 time(s), its max_restarts: it stays lost"));
  EXPECT_TRUE(restarts.empty());
}

TEST(Restarts, AnApplicationThatFailsWhileConfiguredFailsTheAttempt) {
  ScriptedRun run;
  run.port_up = true;
  Restarts restarts(run, kTimeouts);
  auto now = Clock::now();
  restarts.schedule("bu0", on_failure(), false, now);
  now += milliseconds(100);
  restarts.step(now);  // started
  restarts.step(now);  // configured
  ASSERT_EQ(run.configured.size(), 1u);
  run.failure = "application bu0 failed: disk full";
  restarts.step(now);
  EXPECT_TRUE(run.noted("restarting context bu0 failed: application bu0 failed: disk full"));
  EXPECT_EQ(run.kills, std::vector<std::string>{"bu0"});
  EXPECT_TRUE(run.noted("restart 2 of 3"));
}

TEST(Restarts, PhasesThatOutliveTheirDeadlineFail) {
  ScriptedRun run;
  run.port_up = true;
  Restarts restarts(run, kTimeouts);
  auto now = Clock::now();
  restarts.schedule("bu0", on_failure(), false, now);
  now += milliseconds(100);
  restarts.step(now);
  restarts.step(now);  // configuring from now on
  restarts.step(now + milliseconds(1999));
  EXPECT_TRUE(run.kills.empty());
  restarts.step(now + milliseconds(2000));
  EXPECT_TRUE(run.noted("its applications did not reach Ready within 2 s"));

  ScriptedRun run2;
  run2.port_up = true;
  run2.ready = true;
  Restarts enabling(run2, kTimeouts);
  enabling.schedule("bu0", on_failure(), false, now);
  now += milliseconds(100);
  enabling.step(now);  // started
  enabling.step(now);  // Configure sent
  enabling.step(now);  // Ready: Enable sent
  ASSERT_EQ(run2.enables.size(), 1u);
  enabling.step(now + milliseconds(3000));
  EXPECT_TRUE(run2.noted("its applications did not reach Enabled within 3 s"));
}

TEST(Restarts, AProcessThatDiesAgainIsLeftToTheRun) {
  ScriptedRun run;
  Restarts restarts(run, kTimeouts);
  auto now = Clock::now();
  restarts.schedule("bu0", on_failure(), false, now);
  now += milliseconds(100);
  restarts.step(now);  // started
  run.dies("bu0");
  restarts.step(now);
  EXPECT_TRUE(restarts.empty());
  EXPECT_TRUE(run.kills.empty());
  EXPECT_FALSE(run.noted("failed"));  // the run reports the death and schedules again itself
  EXPECT_EQ(restarts.attempts("bu0"), 1u);
}

}  // namespace
}  // namespace daqflow::control
