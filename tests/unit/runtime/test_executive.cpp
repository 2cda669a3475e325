// The executive driven over its real control API: transitions run asynchronously on the control
// thread, failures from hooks, from the agent thread and from draining, context-wide ordering by
// enable rank, several contexts in one process, and shutdown. Ports 23000-23099.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <future>
#include <thread>

#include "test_executive_apps.hpp"

namespace daqflow::runtime {
namespace {

using namespace exec_testing;
using namespace std::chrono_literals;

std::vector<std::string> entries_of(const std::string& suffix) {
  std::vector<std::string> out;
  for (const auto& e : hook_log().entries()) {
    if (e.size() >= suffix.size() &&
        e.compare(e.size() - suffix.size(), suffix.size(), suffix) == 0) {
      out.push_back(e);
    }
  }
  return out;
}

std::ptrdiff_t position(const std::vector<std::string>& log, const std::string& entry) {
  const auto it = std::find(log.begin(), log.end(), entry);
  return it == log.end() ? -1 : it - log.begin();
}

TEST(Executive, RunsAnApplicationThroughConfigureEnableSuspendResumeHalt) {
  hook_log().clear();
  auto exec = start_executive(make_cluster({{"ctx", 23001}}, {app("c1")}), {"ctx"});
  ASSERT_TRUE(exec);
  Api api(23001);

  auto r = api.post("/api/v1/apps/c1/fsm/Configure");
  EXPECT_EQ(r.status, 202);
  EXPECT_EQ(r.body, (json{{"id", "c1"}, {"command", "Configure"}, {"state", "Configuring"}}));
  ASSERT_EQ(api.wait_state("c1", "Ready"), "Ready");
  auto detail = api.get("/api/v1/apps/c1").body;
  EXPECT_EQ(detail.at("metrics").at("work"), 0);
  EXPECT_EQ(detail.at("metrics").at("probe"), 42.0);

  r = api.post("/api/v1/apps/c1/fsm/Enable");
  EXPECT_EQ(r.status, 202);
  EXPECT_EQ(r.body.at("state"), "Enabling");
  ASSERT_EQ(api.wait_state("c1", "Enabled"), "Enabled");
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (api.metric("c1", "work") < 100 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
  EXPECT_GE(api.metric("c1", "work"), 100u) << "the agent calls do_work while Enabled";

  EXPECT_EQ(api.post("/api/v1/apps/c1/fsm/Suspend").body.at("state"), "Suspending");
  ASSERT_EQ(api.wait_state("c1", "Suspended"), "Suspended");
  const auto suspended_at = api.metric("c1", "work");
  std::this_thread::sleep_for(30ms);
  EXPECT_LE(api.metric("c1", "work") - suspended_at, 1u) << "no work while Suspended";

  EXPECT_EQ(api.post("/api/v1/apps/c1/fsm/Resume").body.at("state"), "Resuming");
  ASSERT_EQ(api.wait_state("c1", "Enabled"), "Enabled");
  const auto resumed_at = api.metric("c1", "work");
  while (api.metric("c1", "work") == resumed_at &&
         std::chrono::steady_clock::now() < deadline + 5s) {
    std::this_thread::sleep_for(1ms);
  }
  EXPECT_GT(api.metric("c1", "work"), resumed_at);

  EXPECT_EQ(api.post("/api/v1/apps/c1/fsm/Halt").body.at("state"), "Halting");
  ASSERT_EQ(api.wait_state("c1", "Halted"), "Halted");
  detail = api.get("/api/v1/apps/c1").body;
  EXPECT_FALSE(detail.at("metrics").contains("probe")) << "probes are dropped at Halt";
  EXPECT_EQ(detail.at("results").at("count"), detail.at("metrics").at("work"));
  EXPECT_EQ(entries_of(":release"), std::vector<std::string>{"c1:release"});
  EXPECT_EQ(hook_log().entries(),
            (std::vector<std::string>{"c1:configure", "c1:enable", "c1:suspend", "c1:resume",
                                      "c1:begin_halt", "c1:release"}));
}

TEST(Executive, ConfigureStartsANewRunWithCountersAtZero) {
  auto exec = start_executive(make_cluster({{"ctx", 23002}}, {app("c1")}), {"ctx"});
  ASSERT_TRUE(exec);
  Api api(23002);
  for (int run = 0; run < 2; ++run) {
    api.post("/api/v1/apps/c1/fsm/Configure");
    ASSERT_EQ(api.wait_state("c1", "Ready"), "Ready");
    EXPECT_EQ(api.metric("c1", "work"), 0u) << "run " << run;
    api.post("/api/v1/apps/c1/fsm/Enable");
    ASSERT_EQ(api.wait_state("c1", "Enabled"), "Enabled");
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (api.metric("c1", "work") == 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(1ms);
    }
    api.post("/api/v1/apps/c1/fsm/Halt");
    ASSERT_EQ(api.wait_state("c1", "Halted"), "Halted");
    EXPECT_GT(api.metric("c1", "work"), 0u);
  }
}

TEST(Executive, AFailureReportedByTheApplicationNeedsAReset) {
  hook_log().clear();
  auto exec =
      start_executive(make_cluster({{"ctx", 23003}}, {app("c1", {{"fail_at", 50}})}), {"ctx"});
  ASSERT_TRUE(exec);
  Api api(23003);
  api.post("/api/v1/apps/c1/fsm/Configure");
  ASSERT_EQ(api.wait_state("c1", "Ready"), "Ready");
  api.post("/api/v1/apps/c1/fsm/Enable");
  ASSERT_EQ(api.wait_state("c1", "Failed"), "Failed");
  auto detail = api.get("/api/v1/apps/c1").body;
  EXPECT_EQ(detail.at("reason"), "count reached 50");
  EXPECT_EQ(entries_of(":release"), std::vector<std::string>{"c1:release"})
      << "a failure stops the agent and releases the application";

  for (const char* refused : {"Halt", "Enable", "Configure", "Suspend", "Resume"}) {
    const auto r = api.post(std::string("/api/v1/apps/c1/fsm/") + refused);
    EXPECT_EQ(r.status, 409) << refused;
    EXPECT_TRUE(r.body.at("error").get<std::string>().find("is Failed") != std::string::npos)
        << r.body.dump();
  }
  EXPECT_EQ(api.state("c1"), "Failed");
  EXPECT_EQ(api.get("/api/v1/apps/c1").body.at("reason"), "count reached 50")
      << "a refused command changes nothing";

  const auto r = api.post("/api/v1/apps/c1/fsm/Reset");
  EXPECT_EQ(r.status, 202);
  EXPECT_EQ(r.body.at("state"), "Halted");
  ASSERT_EQ(api.wait_state("c1", "Halted"), "Halted");
  EXPECT_EQ(api.get("/api/v1/apps/c1").body.at("reason"), "");
  EXPECT_EQ(entries_of(":release").size(), 1u) << "released once, not again at Reset";

  api.post("/api/v1/apps/c1/fsm/Configure");
  EXPECT_EQ(api.wait_state("c1", "Ready"), "Ready") << "a reset application runs again";
}

TEST(Executive, AConfigureErrorIsAFailureWithItsReason) {
  hook_log().clear();
  auto exec = start_executive(
      make_cluster({{"ctx", 23004}}, {app("c1", {{"fail_configure", true}})}), {"ctx"});
  ASSERT_TRUE(exec);
  Api api(23004);
  api.post("/api/v1/apps/c1/fsm/Configure");
  ASSERT_EQ(api.wait_state("c1", "Failed"), "Failed");
  EXPECT_EQ(api.get("/api/v1/apps/c1").body.at("reason"),
            "configure: application 'c1': told to fail at configure");
  EXPECT_EQ(entries_of(":release"), std::vector<std::string>{"c1:release"})
      << "what configure allocated before failing is released";
}

TEST(Executive, AnExceptionFromAHookIsAFailure) {
  auto exec = start_executive(make_cluster({{"ctx", 23005}}, {app("c1", {{"throw_enable", true}})}),
                              {"ctx"});
  ASSERT_TRUE(exec);
  Api api(23005);
  api.post("/api/v1/apps/c1/fsm/Configure");
  ASSERT_EQ(api.wait_state("c1", "Ready"), "Ready");
  api.post("/api/v1/apps/c1/fsm/Enable");
  ASSERT_EQ(api.wait_state("c1", "Failed"), "Failed");
  EXPECT_EQ(api.get("/api/v1/apps/c1").body.at("reason"),
            "enable: application 'c1': threw: enable exploded");
  EXPECT_EQ(api.get("/api/v1/context").body.at("state"), "Failed");
}

TEST(Executive, HaltFailsWhenTheApplicationDoesNotDrainInTime) {
  ExecutiveOptions options;
  options.halt_timeout = 100ms;
  auto exec = start_executive(make_cluster({{"ctx", 23006}}, {app("c1", {{"stuck", true}})}),
                              {"ctx"}, options);
  ASSERT_TRUE(exec);
  Api api(23006);
  api.post("/api/v1/apps/c1/fsm/Configure");
  ASSERT_EQ(api.wait_state("c1", "Ready"), "Ready");
  const auto start = std::chrono::steady_clock::now();
  api.post("/api/v1/apps/c1/fsm/Halt");
  ASSERT_EQ(api.wait_state("c1", "Failed"), "Failed");
  EXPECT_GE(std::chrono::steady_clock::now() - start, 100ms);
  EXPECT_EQ(api.get("/api/v1/apps/c1").body.at("reason"),
            "halt timed out draining after 100 ms: told to stay stuck")
      << "the application says what it still waits for";
}

TEST(Executive, ContextCommandsFollowTheEnableRank) {
  hook_log().clear();
  // Configuration order mixes the ranks: producers (rank 1) must start after and stop before
  // consumers (rank 0).
  auto exec =
      start_executive(make_cluster({{"ctx", 23007}},
                                   {app_of_type("p1", "producer"), app_of_type("c1", "consumer"),
                                    app_of_type("p2", "producer"), app_of_type("c2", "consumer")}),
                      {"ctx"});
  ASSERT_TRUE(exec);
  Api api(23007);
  auto r = api.post("/api/v1/fsm/Configure");
  EXPECT_EQ(r.status, 202);
  EXPECT_EQ(r.body, (json{{"command", "Configure"},
                          {"applications",
                           {{{"id", "c1"}, {"state", "Configuring"}},
                            {{"id", "c2"}, {"state", "Configuring"}},
                            {{"id", "p1"}, {"state", "Configuring"}},
                            {{"id", "p2"}, {"state", "Configuring"}}}}}));
  for (const char* id : {"p1", "c1", "p2", "c2"}) ASSERT_EQ(api.wait_state(id, "Ready"), "Ready");
  EXPECT_EQ(api.get("/api/v1/context").body.at("state"), "Ready");

  hook_log().clear();
  EXPECT_EQ(api.post("/api/v1/fsm/Enable").status, 202);
  for (const char* id : {"p1", "c1", "p2", "c2"})
    ASSERT_EQ(api.wait_state(id, "Enabled"), "Enabled");
  EXPECT_EQ(entries_of(":enable"),
            (std::vector<std::string>{"c1:enable", "c2:enable", "p1:enable", "p2:enable"}));

  hook_log().clear();
  EXPECT_EQ(api.post("/api/v1/fsm/Halt").status, 202);
  for (const char* id : {"p1", "c1", "p2", "c2"}) ASSERT_EQ(api.wait_state(id, "Halted"), "Halted");
  const auto log = hook_log().entries();
  // Producers halt (begin, drain, release) as a group before any consumer begins to halt.
  const auto first_consumer =
      std::min(position(log, "c1:begin_halt"), position(log, "c2:begin_halt"));
  for (const char* e : {"p1:begin_halt", "p2:begin_halt", "p1:release", "p2:release"}) {
    ASSERT_GE(position(log, e), 0) << e;
    EXPECT_LT(position(log, e), first_consumer) << e;
  }
  EXPECT_LT(position(log, "p2:begin_halt"), position(log, "p1:release"))
      << "one rank begins to halt together before it releases";
  EXPECT_EQ(api.get("/api/v1/context").body.at("state"), "Halted");
}

TEST(Executive, ContextCommandsLeaveApplicationsAlreadyThereAlone) {
  auto exec = start_executive(
      make_cluster({{"ctx", 23008}}, {app("c1"), app("c2", {{"fail_configure", true}})}), {"ctx"});
  ASSERT_TRUE(exec);
  Api api(23008);
  api.post("/api/v1/apps/c1/fsm/Configure");
  ASSERT_EQ(api.wait_state("c1", "Ready"), "Ready");
  EXPECT_EQ(api.get("/api/v1/context").body.at("state"), "Mixed");

  // Enable needs every application Ready (or Enabled): c2 is Halted.
  auto r = api.post("/api/v1/fsm/Enable");
  EXPECT_EQ(r.status, 409);
  EXPECT_NE(r.body.at("error").get<std::string>().find("application 'c2' is Halted"),
            std::string::npos)
      << r.body.dump();
  EXPECT_EQ(api.state("c1"), "Ready") << "a refused context command changes nothing";

  r = api.post("/api/v1/fsm/Configure");
  EXPECT_EQ(r.status, 202);
  EXPECT_EQ(r.body.at("applications"),
            (json{{{"id", "c1"}, {"state", "Ready"}}, {{"id", "c2"}, {"state", "Configuring"}}}));
  ASSERT_EQ(api.wait_state("c2", "Failed"), "Failed");
  EXPECT_EQ(api.get("/api/v1/context").body.at("state"), "Failed");

  // Halt stops what runs and leaves the failure visible; Reset clears it.
  EXPECT_EQ(api.post("/api/v1/fsm/Halt").status, 202);
  ASSERT_EQ(api.wait_state("c1", "Halted"), "Halted");
  EXPECT_EQ(api.state("c2"), "Failed");
  EXPECT_EQ(api.post("/api/v1/fsm/Reset").status, 202);
  ASSERT_EQ(api.wait_state("c2", "Halted"), "Halted");
  EXPECT_EQ(api.get("/api/v1/context").body.at("state"), "Halted");
}

TEST(Executive, ShutdownOverTheApiHaltsEverythingAndEndsWait) {
  hook_log().clear();
  auto exec = start_executive(make_cluster({{"ctx", 23009}}, {app("c1"), app("c2")}), {"ctx"});
  ASSERT_TRUE(exec);
  Api api(23009);
  api.post("/api/v1/fsm/Configure");
  ASSERT_EQ(api.wait_state("c2", "Ready"), "Ready");
  api.post("/api/v1/apps/c1/fsm/Enable");
  ASSERT_EQ(api.wait_state("c1", "Enabled"), "Enabled");

  auto waited = std::async(std::launch::async, [&] { exec->wait(); });
  const auto r = api.post("/api/v1/shutdown");
  EXPECT_EQ(r.status, 202);
  ASSERT_EQ(waited.wait_for(15s), std::future_status::ready) << "wait() returns after shutdown";
  std::vector<std::string> released = entries_of(":release");
  std::sort(released.begin(), released.end());
  EXPECT_EQ(released, (std::vector<std::string>{"c1:release", "c2:release"}));
  EXPECT_EQ(api.get("/api/v1/context").status, 0) << "the server no longer answers";
}

TEST(Executive, ALeaseNotRenewedShutsTheExecutiveDown) {
  hook_log().clear();
  ExecutiveOptions options;
  options.lease = 600ms;
  auto exec = start_executive(make_cluster({{"ctx", 23023}}, {app("c1")}), {"ctx"}, options);
  ASSERT_TRUE(exec);
  Api api(23023);
  api.post("/api/v1/fsm/Configure");
  ASSERT_EQ(api.wait_state("c1", "Ready"), "Ready");
  auto waited = std::async(std::launch::async, [&] { exec->wait(); });
  // Renewed: it stays, for several times the lease.
  for (int i = 0; i < 12; ++i) {
    const auto r = api.post("/api/v1/lease");
    ASSERT_EQ(r.status, 200);
    EXPECT_EQ(r.body.at("run").at("lease_ms"), 600);
    EXPECT_LT(r.body.at("run").at("controller_seen_ms_ago").get<int>(), 600);
    std::this_thread::sleep_for(150ms);
  }
  EXPECT_EQ(waited.wait_for(0s), std::future_status::timeout) << "renewed, it keeps running";
  // No more renewals: it halts its applications and ends.
  ASSERT_EQ(waited.wait_for(30s), std::future_status::ready);
  EXPECT_EQ(entries_of(":release"), (std::vector<std::string>{"c1:release"}));
}

TEST(Executive, AStopRequestIsShownToTheController) {
  auto exec = start_executive(make_cluster({{"ctx", 23024}}, {app("c1")}), {"ctx"});
  ASSERT_TRUE(exec);
  Api api(23024);
  const auto before = api.get("/api/v1/context");
  ASSERT_EQ(before.status, 200);
  EXPECT_EQ(before.body.at("run").at("stop_requested"), false);
  EXPECT_TRUE(before.body.at("run").at("lease_ms").is_null());
  EXPECT_TRUE(before.body.at("run").at("controller_seen_ms_ago").is_null());
  EXPECT_EQ(api.post("/api/v1/stop").status, 202);
  const auto lease = api.post("/api/v1/lease");
  EXPECT_EQ(lease.body.at("run").at("stop_requested"), true);
  EXPECT_EQ(api.get("/api/v1/context").body.at("run").at("stop_requested"), true);
}

TEST(Executive, ShutdownRefusesFurtherCommands) {
  auto exec = start_executive(make_cluster({{"ctx", 23010}}, {app("c1")}), {"ctx"});
  ASSERT_TRUE(exec);
  exec->request_shutdown();
  exec->wait();
  exec->wait();  // idempotent
  Api api(23010);
  EXPECT_EQ(api.get("/api/v1/context").status, 0);
}

TEST(Executive, DestroyingARunningExecutiveHaltsItsApplications) {
  hook_log().clear();
  {
    auto exec = start_executive(make_cluster({{"ctx", 23011}}, {app("c1")}), {"ctx"});
    ASSERT_TRUE(exec);
    Api api(23011);
    api.post("/api/v1/apps/c1/fsm/Configure");
    ASSERT_EQ(api.wait_state("c1", "Ready"), "Ready");
    api.post("/api/v1/apps/c1/fsm/Enable");
    ASSERT_EQ(api.wait_state("c1", "Enabled"), "Enabled");
  }
  EXPECT_EQ(entries_of(":release"), std::vector<std::string>{"c1:release"});
}

TEST(Executive, HostsSeveralContextsEachOnItsOwnPort) {
  auto exec =
      start_executive(make_cluster({{"a", 23012}, {"b", 23013}},
                                   {app_in("a1", "a"), app_in("b1", "b"), app_in("b2", "b")}),
                      {"a", "b"});
  ASSERT_TRUE(exec);
  EXPECT_EQ(exec->contexts(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(exec->control_port("b"), 23013);
  Api a(23012);
  Api b(23013);
  EXPECT_EQ(a.get("/api/v1/apps").body.size(), 1u);
  EXPECT_EQ(b.get("/api/v1/apps").body.size(), 2u);
  const auto r = a.get("/api/v1/apps/b1");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.body.at("error"), "application 'b1' is hosted by context 'b', not by 'a'");

  b.post("/api/v1/fsm/Configure");
  ASSERT_EQ(b.wait_state("b2", "Ready"), "Ready");
  EXPECT_EQ(a.state("a1"), "Halted") << "a context command stays in its context";

  auto waited = std::async(std::launch::async, [&] { exec->wait(); });
  EXPECT_EQ(a.post("/api/v1/shutdown").status, 202);
  ASSERT_EQ(waited.wait_for(15s), std::future_status::ready);
  EXPECT_EQ(b.get("/api/v1/context").status, 0) << "a shutdown ends the whole process";
}

TEST(Executive, APortInUseIsReportedWithTheContextAndAddress) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(23014);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(fd, 1), 0);

  auto exec = Executive::create(
      make_cluster({{"ok", 23015}, {"ru1", 23014}}, {app_in("x", "ok"), app_in("r", "ru1")}),
      {"ok", "ru1"}, test_registry());
  ASSERT_TRUE(exec.ok()) << exec.error().message();
  const auto started = (*exec)->start();
  ASSERT_FALSE(started.ok());
  EXPECT_EQ(started.error().message(),
            "context ru1: cannot listen on 127.0.0.1:23014: Address already in use");
  EXPECT_EQ(Api(23015).get("/api/v1/context").status, 0) << "nothing is left listening";
  ::close(fd);
}

// Asks for its endpoint at Configure, as applications that move data do.
class EndpointApp final : public Application {
 public:
  Result<void> configure(AppContext& ctx) override {
    auto ep = ctx.endpoint();
    if (!ep) return ep.error();
    auto again = ctx.endpoint();
    if (!again || *again != *ep) return Error("a second endpoint() call made another endpoint");
    self_ = static_cast<int>((*ep)->self());
    return ok();
  }
  int do_work() override { return 0; }
  json results() const override { return json{{"self", self_.load()}}; }

 private:
  std::atomic<int> self_{-1};
};

AppRegistry endpoint_registry() {
  AppRegistry r;
  AppType t;
  t.name = "endpoint_user";
  t.make = [] { return std::make_unique<EndpointApp>(); };
  r.add(std::move(t));
  return r;
}

TEST(Executive, ApplicationsGetEndpointsOnTheirConfiguredTransport) {
  const AppRegistry registry = endpoint_registry();
  ClusterConfig cluster =
      make_cluster({{"a", 23019}, {"b", 23020}}, {app_in("e0", "a"), app_in("e1", "b")});
  for (auto& a : cluster.applications) {
    a.type = "endpoint_user";
    a.params = json::object();
  }
  auto exec = Executive::create(std::move(cluster), {"a", "b"}, registry);
  ASSERT_TRUE(exec.ok()) << exec.error().message();
  ASSERT_TRUE((*exec)->start().ok());
  Api a(23019);
  Api b(23020);
  a.post("/api/v1/fsm/Configure");
  b.post("/api/v1/fsm/Configure");
  ASSERT_EQ(a.wait_state("e0", "Ready"), "Ready") << a.get("/api/v1/apps/e0").body.dump();
  ASSERT_EQ(b.wait_state("e1", "Ready"), "Ready") << b.get("/api/v1/apps/e1").body.dump();
  EXPECT_EQ(a.get("/api/v1/apps/e0").body.at("results").at("self"), 0);
  EXPECT_EQ(b.get("/api/v1/apps/e1").body.at("results").at("self"), 1);
  a.post("/api/v1/fsm/Halt");
  EXPECT_EQ(a.wait_state("e0", "Halted"), "Halted");
  a.post("/api/v1/fsm/Configure");
  EXPECT_EQ(a.wait_state("e0", "Ready"), "Ready") << "the endpoint is made again after a Halt";
}

TEST(Executive, AnUnknownTransportFailsConfigureNamingApplicationAndTransport) {
  const AppRegistry registry = endpoint_registry();
  ClusterConfig cluster = make_cluster({{"ctx", 23021}}, {app("e0")});
  cluster.applications[0].type = "endpoint_user";
  cluster.applications[0].transport = "carrier_pigeon";
  auto exec = Executive::create(std::move(cluster), {"ctx"}, registry);
  ASSERT_TRUE(exec.ok()) << exec.error().message();
  ASSERT_TRUE((*exec)->start().ok());
  Api api(23021);
  api.post("/api/v1/apps/e0/fsm/Configure");
  ASSERT_EQ(api.wait_state("e0", "Failed"), "Failed");
  const std::string reason = api.get("/api/v1/apps/e0").body.at("reason");
  EXPECT_EQ(
      reason.rfind("configure: application 'e0': endpoint on transport 'carrier_pigeon': ", 0), 0u)
      << reason;
}

TEST(Executive, ASecondExecutiveCannotTakeARunningContextsPort) {
  auto first = start_executive(make_cluster({{"ctx", 23022}}, {app("c1")}), {"ctx"});
  ASSERT_TRUE(first);
  auto second =
      Executive::create(make_cluster({{"ctx", 23022}}, {app("c1")}), {"ctx"}, test_registry());
  ASSERT_TRUE(second.ok());
  const auto started = (*second)->start();
  ASSERT_FALSE(started.ok()) << "two executives would share the port's connections";
  EXPECT_EQ(started.error().message(),
            "context ctx: cannot listen on 127.0.0.1:23022: Address already in use");
  EXPECT_EQ(Api(23022).get("/api/v1/context").status, 200);
}

TEST(Executive, AnUnknownContextIsAnErrorNamingTheKnownOnes) {
  auto exec = Executive::create(make_cluster({{"ru1", 23016}, {"bu1", 23017}}, {}), {"ru9"},
                                test_registry());
  ASSERT_FALSE(exec.ok());
  EXPECT_EQ(exec.error().message(),
            "context 'ru9' is not in test-cluster.yaml (contexts: ru1, bu1)");
}

TEST(Executive, AnUnknownApplicationTypeIsAnErrorNamingTheApplication) {
  auto exec = Executive::create(make_cluster({{"ctx", 23018}}, {app_of_type("x1", "warp_drive")}),
                                {"ctx"}, test_registry());
  ASSERT_FALSE(exec.ok());
  EXPECT_NE(exec.error().message().find("application 'x1': unknown type 'warp_drive'"),
            std::string::npos)
      << exec.error().message();
  EXPECT_NE(exec.error().message().find("consumer, producer"), std::string::npos);
}

}  // namespace
}  // namespace daqflow::runtime
