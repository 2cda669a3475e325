// The lifecycle every host drives an application through (daqflow/runtime/lifecycle.hpp): the
// order of hooks and published states, the halt handshake, the first failure, the application's
// name on its errors, results kept apart from configure() and release().

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

#include "daqflow/runtime/config.hpp"
#include "daqflow/runtime/lifecycle.hpp"
#include "daqflow/runtime/metrics.hpp"

namespace daqflow::runtime {
namespace {

// Records its hooks with the run state each saw; what it returns is set by the test.
class Scripted final : public Application {
 public:
  explicit Scripted(std::vector<std::string>& log) : log_(log) {}

  Result<void> configure(AppContext& ctx) override {
    note("configure");
    metrics_ = &ctx.metrics();
    ctx.metrics().probe("held", [this] { return held_ ? 1.0 : 0.0; });
    held_ = true;
    if (fail_configure) return Error("no room for the pool");
    return ok();
  }
  Result<void> enable() override {
    note("enable");
    if (throw_enable) throw std::runtime_error("enable exploded");
    return ok();
  }
  Result<void> suspend() override {
    note("suspend");
    return ok();
  }
  void begin_halt() override { note("begin_halt"); }
  void release() override {
    note("release");
    metrics_->for_each([&](const MetricSample& m) { probes_at_release += m.name == "held"; });
    held_ = false;
  }
  int do_work() override {
    ++rounds;
    if (throw_work) throw std::logic_error("bad index");
    return 0;
  }
  bool drained() const override { return drained_now.load(); }
  nlohmann::json results() const override { return {{"held", held_}}; }

  bool fail_configure = false;
  bool throw_enable = false;
  bool throw_work = false;
  std::atomic<bool> drained_now{false};
  int rounds = 0;
  int probes_at_release = 0;
  using Application::fail;

 private:
  void note(const char* hook) {
    static constexpr const char* kStates[] = {"halted", "ready", "enabled", "suspended", "halting"};
    log_.push_back(std::string(hook) + "@" + kStates[static_cast<int>(run_state())] +
                   (failed() ? "+failed" : ""));
  }

  std::vector<std::string>& log_;
  MetricsRegistry* metrics_ = nullptr;
  bool held_ = false;
};

class Context final : public AppContext {
 public:
  Context() {
    app_.id = "a1";
    cluster_.applications.push_back(app_);
  }
  const ClusterConfig& cluster() const override { return cluster_; }
  const ApplicationConfig& self() const override { return app_; }
  const nlohmann::json& params() const override { return params_; }
  Result<transport::Endpoint*> endpoint(const transport::EndpointOptions*) override {
    return Error("no endpoint here");
  }
  MetricsRegistry& metrics() override { return metrics_; }
  core::Clock& clock() override { return core::MonotonicClock::instance(); }

  [[nodiscard]] std::size_t probes() {
    std::size_t n = 0;
    metrics_.for_each([&](const MetricSample& m) { n += m.name == "held" ? 1 : 0; });
    return n;
  }

 private:
  ClusterConfig cluster_;
  ApplicationConfig app_;
  nlohmann::json params_ = nlohmann::json::object();
  MetricsRegistry metrics_;
};

struct Fixture : ::testing::Test {
  Fixture() {
    auto app = std::make_unique<Scripted>(log);
    scripted = app.get();
    lifecycle = std::make_unique<Lifecycle>(
        std::move(app), "a1", [this](const std::string& r) { failures.push_back(r); });
  }
  std::vector<std::string> log;
  std::vector<std::string> failures;
  Scripted* scripted = nullptr;
  Context ctx;
  std::unique_ptr<Lifecycle> lifecycle;
};

TEST_F(Fixture, EachHookSeesTheStateTheContractPublishes) {
  ASSERT_TRUE(lifecycle->configure(ctx));
  EXPECT_EQ(scripted->run_state(), RunState::ready);
  ASSERT_TRUE(lifecycle->enable());
  EXPECT_TRUE(scripted->producing());
  ASSERT_TRUE(lifecycle->suspend());
  ASSERT_TRUE(lifecycle->begin_halt());
  ASSERT_TRUE(lifecycle->release());
  EXPECT_EQ(scripted->run_state(), RunState::halted);
  EXPECT_EQ(log, (std::vector<std::string>{"configure@halted", "enable@ready", "suspend@suspended",
                                           "begin_halt@halting", "release@halted"}));
}

TEST_F(Fixture, ConfigureOnlyEverSeesAReleasedApplication) {
  ASSERT_TRUE(lifecycle->configure(ctx));
  ASSERT_TRUE(lifecycle->configure(ctx));  // a host configuring again without a halt
  EXPECT_EQ(log,
            (std::vector<std::string>{"configure@halted", "release@halted", "configure@halted"}));
  ASSERT_TRUE(lifecycle->release());
  ASSERT_TRUE(lifecycle->release());  // nothing held: nothing to release
  EXPECT_EQ(log.size(), 4u);
}

TEST_F(Fixture, DrainedWaitsForARoundBegunAfterHalting) {
  ASSERT_TRUE(lifecycle->configure(ctx));
  lifecycle->set_agent_running(true);
  ASSERT_TRUE(lifecycle->enable());
  scripted->drained_now = true;
  (void)lifecycle->agent_round();  // a round while enabled proves nothing about the halt
  ASSERT_TRUE(lifecycle->begin_halt());
  EXPECT_FALSE(lifecycle->drained());
  (void)lifecycle->agent_round();
  EXPECT_TRUE(lifecycle->drained());
  scripted->drained_now = false;
  EXPECT_FALSE(lifecycle->drained()) << "the application's own answer still counts";
}

TEST_F(Fixture, WithoutAnAgentNothingIsInFlight) {
  ASSERT_TRUE(lifecycle->configure(ctx));
  ASSERT_TRUE(lifecycle->begin_halt());
  EXPECT_TRUE(lifecycle->drained());
}

TEST_F(Fixture, ErrorsNameTheHookAndTheApplication) {
  scripted->fail_configure = true;
  auto r = lifecycle->configure(ctx);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message(), "configure: application 'a1': no room for the pool");
  EXPECT_EQ(lifecycle->results(), nlohmann::json::object()) << "a half-configured run has none";
  ASSERT_TRUE(lifecycle->release());
  EXPECT_EQ(log.back(), "release@halted") << "what configure allocated is released";

  scripted->fail_configure = false;
  scripted->throw_enable = true;
  ASSERT_TRUE(lifecycle->configure(ctx));
  r = lifecycle->enable();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message(), "enable: application 'a1': threw: enable exploded");
  EXPECT_EQ(r.error().code(), ErrorCode::internal);
  EXPECT_FALSE(scripted->producing()) << "Enabled is published only once the hook returned";
}

TEST_F(Fixture, TheFirstFailureWaitsForTheHostAndStopsTheDataPathAtOnce) {
  ASSERT_TRUE(lifecycle->configure(ctx));
  ASSERT_TRUE(lifecycle->enable());
  scripted->fail("lost peer bu1");
  scripted->fail("lost peer bu2");  // the application reports only its first
  lifecycle->note_failure("drained threw: x");
  EXPECT_FALSE(scripted->producing());
  EXPECT_TRUE(lifecycle->failure_pending());
  EXPECT_EQ(lifecycle->take_failure(), "lost peer bu1");
  EXPECT_FALSE(lifecycle->take_failure());
  EXPECT_EQ(failures, (std::vector<std::string>{"lost peer bu1", "drained threw: x"}));
  ASSERT_TRUE(lifecycle->release());
  ASSERT_TRUE(lifecycle->configure(ctx));
  EXPECT_FALSE(scripted->failed()) << "a new run starts neither failed nor finished";
}

TEST_F(Fixture, AnExceptionOfTheAgentFailsTheApplicationAndQuietsTheAgent) {
  ASSERT_TRUE(lifecycle->configure(ctx));
  lifecycle->set_agent_running(true);
  scripted->throw_work = true;
  EXPECT_EQ(lifecycle->agent_round(), 0);
  EXPECT_EQ(lifecycle->agent_round(), 0);
  EXPECT_EQ(scripted->rounds, 1) << "a faulted agent does not call the application again";
  EXPECT_FALSE(lifecycle->agent_wait(std::chrono::microseconds(1)));
  EXPECT_EQ(lifecycle->take_failure(), "do_work threw: bad index");
}

TEST_F(Fixture, ReleaseDropsTheProbesBeforeTheHookFreesWhatTheyRead) {
  ASSERT_TRUE(lifecycle->configure(ctx));
  EXPECT_EQ(ctx.probes(), 1u);
  EXPECT_EQ(lifecycle->results(), (nlohmann::json{{"held", true}}));
  ASSERT_TRUE(lifecycle->release());
  EXPECT_EQ(scripted->probes_at_release, 0);
  EXPECT_EQ(ctx.probes(), 0u);
  EXPECT_EQ(lifecycle->results(), (nlohmann::json{{"held", false}}))
      << "results stay readable after release (the application's counters outlive the run)";
}

TEST_F(Fixture, AnAbandonedApplicationIsNotReleased) {
  ASSERT_TRUE(lifecycle->configure(ctx));
  lifecycle->abandon();
  EXPECT_EQ(log, std::vector<std::string>{"configure@halted"});
  EXPECT_EQ(ctx.probes(), 0u);
  EXPECT_EQ(lifecycle->results(), nlohmann::json::object());
  lifecycle.reset();
  EXPECT_EQ(log.size(), 1u);
}

}  // namespace
}  // namespace daqflow::runtime
