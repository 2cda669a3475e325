// The control API contract of docs/control-api.md, over real HTTP: the shape of every answer,
// parameters, and JSON errors with the right status for everything a client can get wrong.
// Ports 23100-23199.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include "daqflow/core/log.hpp"
#include "test_executive_apps.hpp"

namespace daqflow::runtime {
namespace {

using namespace exec_testing;

std::set<std::string> keys(const json& object) {
  std::set<std::string> out;
  for (const auto& [k, v] : object.items()) out.insert(k);
  return out;
}

// Two contexts: "ctx" (served, c1 and p1) and "other" (not served, o1).
ClusterConfig two_contexts(std::uint16_t port) {
  return make_cluster({{"ctx", port}, {"other", static_cast<std::uint16_t>(port + 50)}},
                      {app("c1"), app_of_type("p1", "producer"), app_in("o1", "other")});
}

// Sends each request on one connection after the answer to the previous one has come, and
// returns the answers (headers and Content-Length bytes of body each, or what came before the
// server closed or 2 s passed).
std::string raw_session(std::uint16_t port, const std::vector<std::string>& requests) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return {};
  timeval tv{2, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string answer;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return answer;
  }
  std::size_t from = 0;  // where the answer being read starts
  for (const std::string& request : requests) {
    if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
        static_cast<ssize_t>(request.size())) {
      break;
    }
    char buf[4096];
    bool complete = false;
    while (!complete) {
      const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
      if (n <= 0) break;
      answer.append(buf, static_cast<std::size_t>(n));
      const auto end = answer.find("\r\n\r\n", from);
      if (end == std::string::npos) continue;
      const auto cl = answer.find("Content-Length: ", from);
      const std::size_t length =
          cl == std::string::npos || cl > end ? 0 : std::stoul(answer.substr(cl + 16));
      complete = answer.size() >= end + 4 + length;
      if (complete) from = end + 4 + length;
    }
    if (!complete) break;
  }
  ::close(fd);
  return answer;
}

std::string raw_exchange(std::uint16_t port, const std::string& request) {
  return raw_session(port, {request});
}

class HttpApi : public ::testing::Test {
 protected:
  void start(std::uint16_t port) {
    port_ = port;
    exec_ = start_executive(two_contexts(port), {"ctx"});
    ASSERT_TRUE(exec_);
  }
  Api api() { return Api(port_); }

  std::uint16_t port_ = 0;
  std::unique_ptr<Executive> exec_;
};

TEST_F(HttpApi, ContextDescribesTheContextAndItsApplications) {
  start(23101);
  const auto r = api().get("/api/v1/context");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(keys(r.body), (std::set<std::string>{"name", "host", "control_port", "pid",
                                                 "run_number", "state", "unauthorized_requests",
                                                 "control_port_stats", "run", "applications"}));
  EXPECT_EQ(r.body.at("run_number"), 1) << "the configuration's default";
  EXPECT_EQ(keys(r.body.at("control_port_stats")),
            (std::set<std::string>{"open", "accepted", "refused", "timed_out", "malformed",
                                   "too_large", "idle_closed"}));
  EXPECT_EQ(r.body.at("control_port_stats").at("open"), 1) << "this request's connection";
  EXPECT_EQ(keys(r.body.at("run")),
            (std::set<std::string>{"lease_ms", "controller_seen_ms_ago", "stop_requested"}));
  EXPECT_EQ(r.body.at("name"), "ctx");
  EXPECT_EQ(r.body.at("host"), "127.0.0.1");
  EXPECT_EQ(r.body.at("control_port"), 23101);
  EXPECT_EQ(r.body.at("pid"), ::getpid());
  EXPECT_EQ(r.body.at("state"), "Halted");
  EXPECT_EQ(r.body.at("applications"),
            (json{{{"id", "c1"}, {"type", "consumer"}, {"state", "Halted"}, {"reason", ""}},
                  {{"id", "p1"}, {"type", "producer"}, {"state", "Halted"}, {"reason", ""}}}));
}

TEST_F(HttpApi, ClusterIsTheWholeAddressTable) {
  start(23102);
  const auto r = api().get("/api/v1/cluster");
  ASSERT_EQ(r.status, 200);
  ASSERT_TRUE(r.body.is_array());
  ASSERT_EQ(r.body.size(), 3u);
  EXPECT_EQ(keys(r.body[0]),
            (std::set<std::string>{"index", "id", "type", "context", "host", "data_port"}));
  EXPECT_EQ(r.body[2].at("index"), 2);
  EXPECT_EQ(r.body[2].at("id"), "o1");
  EXPECT_EQ(r.body[2].at("type"), "consumer");
  EXPECT_EQ(r.body[2].at("context"), "other");
  EXPECT_EQ(r.body[1].at("type"), "producer");
}

TEST_F(HttpApi, AppsListsThisContextsApplications) {
  start(23103);
  const auto r = api().get("/api/v1/apps");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(
      r.body,
      (json{{{"id", "c1"}, {"type", "consumer"}, {"index", 0}, {"state", "Halted"}, {"reason", ""}},
            {{"id", "p1"},
             {"type", "producer"},
             {"index", 1},
             {"state", "Halted"},
             {"reason", ""}}}));
}

TEST_F(HttpApi, AnApplicationShowsStateParamsMetricsAndResults) {
  start(23104);
  Api a = api();
  a.put("/api/v1/apps/c1/params", R"({"target": 5})");
  a.post("/api/v1/apps/c1/fsm/Configure");
  ASSERT_EQ(a.wait_state("c1", "Ready"), "Ready");
  auto r = a.get("/api/v1/apps/c1");
  ASSERT_EQ(r.status, 200);
  for (const char* k : {"id", "type", "index", "context", "state", "reason", "finished", "params",
                        "metrics", "results"}) {
    EXPECT_TRUE(r.body.contains(k)) << k;
  }
  EXPECT_EQ(r.body.at("id"), "c1");
  EXPECT_EQ(r.body.at("context"), "ctx");
  EXPECT_EQ(r.body.at("finished"), false);
  json expected_params = counter_defaults();
  expected_params["target"] = 5;
  EXPECT_EQ(r.body.at("params"), expected_params);
  EXPECT_TRUE(r.body.at("metrics").is_object());
  EXPECT_EQ(r.body.at("results"), (json{{"count", 0}}));

  a.post("/api/v1/apps/c1/fsm/Enable");
  ASSERT_EQ(a.wait_state("c1", "Enabled"), "Enabled");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!a.get("/api/v1/apps/c1").body.at("finished").get<bool>() &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  r = a.get("/api/v1/apps/c1");
  EXPECT_EQ(r.body.at("finished"), true);
  EXPECT_GE(r.body.at("results").at("count").get<int>(), 5);
}

TEST_F(HttpApi, ParamsChangeWhileHaltedOrReadyAndTakeEffectAtConfigure) {
  start(23105);
  Api a = api();
  auto r = a.put("/api/v1/apps/c1/params", R"({"step": 7})");
  ASSERT_EQ(r.status, 200) << r.body.dump();
  EXPECT_EQ(r.body.at("params").at("step"), 7);
  EXPECT_EQ(r.body.at("params").at("fail_at"), 0) << "the answer holds every parameter";
  a.post("/api/v1/apps/c1/fsm/Configure");
  ASSERT_EQ(a.wait_state("c1", "Ready"), "Ready");
  EXPECT_EQ(a.get("/api/v1/apps/c1").body.at("metrics").at("step"), 7.0);

  r = a.put("/api/v1/apps/c1/params", R"({"step": 9})");
  EXPECT_EQ(r.status, 200) << "allowed while Ready";
  EXPECT_EQ(a.get("/api/v1/apps/c1").body.at("params").at("step"), 9);
}

TEST_F(HttpApi, ParamsAreRefusedWhileEnabled) {
  start(23106);
  Api a = api();
  a.post("/api/v1/apps/c1/fsm/Configure");
  ASSERT_EQ(a.wait_state("c1", "Ready"), "Ready");
  a.post("/api/v1/apps/c1/fsm/Enable");
  ASSERT_EQ(a.wait_state("c1", "Enabled"), "Enabled");
  const auto r = a.put("/api/v1/apps/c1/params", R"({"step": 3})");
  EXPECT_EQ(r.status, 409);
  EXPECT_EQ(r.body.at("error"),
            "application 'c1' is Enabled; parameters can be changed only while Halted or Ready");
  EXPECT_EQ(a.get("/api/v1/apps/c1").body.at("params").at("step"), 1);
}

TEST_F(HttpApi, InvalidParamsAre400AndChangeNothing) {
  start(23107);
  Api a = api();
  struct Case {
    const char* body;
    const char* mentions;
  };
  for (const Case& c : {Case{R"({"step": 0})", "step"}, Case{R"({"step": "fast"})", "step"},
                        Case{R"({"stpe": 2})", "stpe"}, Case{R"({"peer": "nobody"})", "nobody"},
                        Case{R"([1, 2])", "JSON object"}, Case{R"("step")", "JSON object"}}) {
    const auto r = a.put("/api/v1/apps/c1/params", c.body);
    EXPECT_EQ(r.status, 400) << c.body;
    ASSERT_TRUE(r.body.is_object()) << c.body;
    EXPECT_NE(r.body.at("error").get<std::string>().find(c.mentions), std::string::npos)
        << c.body << " -> " << r.body.dump();
  }
  EXPECT_EQ(a.get("/api/v1/apps/c1").body.at("params"), counter_defaults());
  const auto r = a.put("/api/v1/apps/c1/params", R"({"peer": "o1"})");
  EXPECT_EQ(r.status, 200) << "a reference to an application of another context is fine";
}

TEST_F(HttpApi, MalformedJsonIs400WithAJsonError) {
  start(23108);
  // The last: a number past the range of a double, which the parser refuses with another kind of
  // exception than a syntax error (found by fuzz_control_api).
  for (const char* body :
       {"{\"step\": ", "not json", "", "{\"a\":1}}", "{\"step\": 2.5e0000789}"}) {
    const auto r = api().put("/api/v1/apps/c1/params", body);
    EXPECT_EQ(r.status, 400) << body;
    ASSERT_TRUE(r.body.is_object()) << body;
    EXPECT_EQ(r.body.at("error").get<std::string>().rfind("malformed JSON body: ", 0), 0u)
        << r.body.dump();
  }
}

TEST_F(HttpApi, UnknownApplicationsAre404) {
  start(23109);
  for (const char* path :
       {"/api/v1/apps/zz", "/api/v1/apps/zz/params", "/api/v1/apps/zz/fsm/Configure"}) {
    const std::string p = path;
    const auto r = p.ends_with("params")                ? api().put(p, "{}")
                   : p.find("fsm") != std::string::npos ? api().post(p)
                                                        : api().get(p);
    EXPECT_EQ(r.status, 404) << path;
    EXPECT_EQ(r.body.at("error"), "no application 'zz' in context 'ctx'") << path;
  }
  const auto r = api().get("/api/v1/apps/o1");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.body.at("error"), "application 'o1' is hosted by context 'other', not by 'ctx'");
}

TEST_F(HttpApi, UnknownCommandsAre400) {
  start(23110);
  for (const char* path : {"/api/v1/apps/c1/fsm/Start", "/api/v1/fsm/Launch"}) {
    const auto r = api().post(path);
    EXPECT_EQ(r.status, 400) << path;
    EXPECT_NE(r.body.at("error").get<std::string>().find("expected one of Configure, Enable"),
              std::string::npos);
  }
  EXPECT_EQ(api().state("c1"), "Halted");
}

TEST_F(HttpApi, CommandsAreMatchedIgnoringCaseAndAnsweredByTheirName) {
  start(23111);
  const auto r = api().post("/api/v1/apps/c1/fsm/configure");
  EXPECT_EQ(r.status, 202);
  EXPECT_EQ(r.body.at("command"), "Configure");
}

TEST_F(HttpApi, ACommandNotAllowedIs409AndChangesNothing) {
  start(23112);
  auto r = api().post("/api/v1/apps/c1/fsm/Enable");
  EXPECT_EQ(r.status, 409);
  EXPECT_EQ(r.body.at("error"), "application 'c1' is Halted: Enable is allowed only from Ready");
  r = api().post("/api/v1/apps/c1/fsm/Halt");
  EXPECT_EQ(r.status, 409);
  EXPECT_EQ(r.body.at("error"),
            "application 'c1' is Halted: Halt is allowed only from Ready or Enabled or Suspended");
  EXPECT_EQ(api().state("c1"), "Halted");
}

TEST_F(HttpApi, ActionsNeedAConfiguredApplicationAndOneItKnows) {
  start(23130);
  Api a = api();
  auto r = a.post("/api/v1/apps/c1/actions/in_doubt");
  EXPECT_EQ(r.status, 409) << r.body.dump();
  EXPECT_EQ(r.body.at("error"), "application 'c1' is not configured (state Halted): no action now");
  a.post("/api/v1/apps/c1/fsm/Configure");
  ASSERT_EQ(a.wait_state("c1", "Ready"), "Ready");
  r = a.post("/api/v1/apps/c1/actions/in_doubt");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.body.at("error"), "application 'c1' has no action 'in_doubt'");
  r = a.post("/api/v1/apps/c1/actions/x", "{not json");
  EXPECT_EQ(r.status, 400);
  r = a.post("/api/v1/apps/c1/actions/in_doubt", "[1, 2]");
  EXPECT_EQ(r.status, 400) << "the arguments are an object";
  EXPECT_EQ(r.body.at("error"), "an action's arguments are a JSON object, not array");
  EXPECT_EQ(a.get("/api/v1/apps/c1/actions/x").status, 405);
}

TEST_F(HttpApi, ConfigureTakesTheRunsKeyAndTheOtherCommandsNoBody) {
  start(23131);
  Api a = api();
  const std::pair<const char*, const char*> refused[] = {
      {"[1]", "a command's body is a JSON object, not array"},
      {R"({"run_key": "12"})", "run_key is 16 hexadecimal digits in a string"},
      {R"({"run_key": 5})", "run_key is 16 hexadecimal digits in a string"},
      {R"({"run_key": "0123456789abcdeg"})", "run_key is 16 hexadecimal digits in a string"},
      {R"({"key": "0123456789abcdef"})",
       "unknown field 'key' in the body of Configure (Configure takes run_key, the other "
       "commands nothing)"},
  };
  for (const auto& [body, why] : refused) {
    const auto r = a.post("/api/v1/fsm/Configure", body);
    EXPECT_EQ(r.status, 400) << body;
    EXPECT_EQ(r.body.value("error", ""), why) << body;
  }
  auto r = a.post("/api/v1/fsm/Enable", R"({"run_key": "0123456789abcdef"})");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(a.wait_state("c1", "Halted"), "Halted") << "nothing refused was done";
  r = a.post("/api/v1/fsm/Configure", R"({"run_key": "0123456789ABCDEF"})");
  EXPECT_EQ(r.status, 202) << r.body.dump();
  EXPECT_EQ(a.wait_state("c1", "Ready"), "Ready");
}

TEST_F(HttpApi, UnknownPathsAre404) {
  start(23113);
  for (const char* path :
       {"/index.html", "/api", "/api/v1", "/api/v2/context", "/api/v1/contexts/ctx",
        "/api/v1/apps/c1/fsm", "/api/v1/apps/c1/metrics", "/api/v1/fsm"}) {
    const auto r = api().get(path);
    EXPECT_EQ(r.status, 404) << path;
    ASSERT_TRUE(r.body.is_object()) << path;
    EXPECT_TRUE(r.body.contains("error")) << path;
  }
}

TEST_F(HttpApi, WrongMethodsAre405WithAllow) {
  start(23114);
  struct Case {
    std::string method;
    std::string path;
    std::string allow;
  };
  for (const Case& c :
       {Case{"POST", "/api/v1/context", "GET"}, Case{"DELETE", "/api/v1/apps/c1", "GET"},
        Case{"GET", "/api/v1/apps/c1/params", "PUT"},
        Case{"GET", "/api/v1/apps/c1/fsm/Configure", "POST"},
        Case{"PUT", "/api/v1/fsm/Configure", "POST"}, Case{"GET", "/api/v1/shutdown", "POST"},
        Case{"DELETE", "/api/v1/apps/nobody", "GET"}}) {
    Api a = api();
    const Reply r = c.method == "POST"  ? a.post(c.path)
                    : c.method == "PUT" ? a.put(c.path, "{}")
                    : c.method == "GET" ? a.get(c.path)
                                        : a.del(c.path);
    EXPECT_EQ(r.status, 405) << c.method << " " << c.path;
    EXPECT_EQ(r.allow, c.allow) << c.method << " " << c.path;
    EXPECT_TRUE(r.body.is_object() && r.body.contains("error")) << c.method << " " << c.path;
  }
  EXPECT_EQ(api().state("c1"), "Halted") << "GET of a command path runs nothing";
}

TEST_F(HttpApi, GarbageOnTheWireIsAnsweredAndTheServerGoesOn) {
  start(23115);
  const std::string answer = raw_exchange(23115, "NONSENSE\r\n\r\n");
  EXPECT_EQ(answer.rfind("HTTP/1.1 400", 0), 0u) << answer;
  EXPECT_NE(answer.find("{\"error\":"), std::string::npos) << answer;
  const std::string huge_header =
      "GET /api/v1/context HTTP/1.1\r\nX: " + std::string(20000, 'x') + "\r\n\r\n";
  (void)raw_exchange(23115, huge_header);
  (void)raw_exchange(23115, std::string("\x00\xff\x01\r\n\r\n", 7));
  EXPECT_EQ(api().get("/api/v1/context").status, 200);
}

TEST_F(HttpApi, APostWithoutABodyIsACommandLikeAnyOther) {
  start(23119);
  // What `curl -X POST URL` sends: no Content-Length at all.
  const std::string answer =
      raw_exchange(23119, "POST /api/v1/apps/c1/fsm/Configure HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  EXPECT_EQ(answer.rfind("HTTP/1.1 202", 0), 0u) << answer;
  EXPECT_NE(answer.find("\"state\":\"Configuring\""), std::string::npos) << answer;
}

TEST_F(HttpApi, RequestsOnOneConnectionKeepTheirBodiesApart) {
  start(23120);
  const std::string params = R"({"step": 4})";
  const std::string put =
      "PUT /api/v1/apps/c1/params HTTP/1.1\r\nHost: 127.0.0.1\r\n"
      "Content-Type: application/json\r\nContent-Length: " +
      std::to_string(params.size()) + "\r\n\r\n" + params;
  const std::string post =
      "POST /api/v1/apps/c1/fsm/Configure HTTP/1.1\r\nHost: 127.0.0.1\r\n"
      "Content-Length: 2\r\n\r\n{}";
  const std::string get =
      "GET /api/v1/apps HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  const std::string answer = raw_session(23120, {put, post, get});
  EXPECT_EQ(answer.rfind("HTTP/1.1 200", 0), 0u) << answer;
  EXPECT_NE(answer.find("HTTP/1.1 202"), std::string::npos) << answer;
  EXPECT_NE(answer.find("\"id\":\"p1\""), std::string::npos) << answer;
  EXPECT_EQ(api().get("/api/v1/apps/c1").body.at("params").at("step"), 4);
}

TEST_F(HttpApi, ATooLargeBodyIs413WithAJsonError) {
  start(23121);
  const auto r =
      api().put("/api/v1/apps/c1/params", "{\"step\": \"" + std::string(2 << 20, 'x') + "\"}");
  EXPECT_EQ(r.status, 413);
  ASSERT_TRUE(r.body.is_object());
  EXPECT_TRUE(r.body.contains("error"));
  EXPECT_EQ(api().get("/api/v1/context").status, 200);
}

TEST_F(HttpApi, InvalidUtf8InAPathStillGetsAJsonAnswer) {
  start(23116);
  const auto r = api().get("/api/v1/apps/%FF%FE");
  EXPECT_EQ(r.status, 404);
  ASSERT_TRUE(r.body.is_object());
  EXPECT_TRUE(r.body.contains("error"));
}

TEST_F(HttpApi, ContextWideCommandsAnswerEveryApplicationInEnableOrder) {
  start(23117);
  const auto r = api().post("/api/v1/fsm/Configure");
  EXPECT_EQ(r.status, 202);
  EXPECT_EQ(r.body, (json{{"command", "Configure"},
                          {"applications",
                           {{{"id", "c1"}, {"state", "Configuring"}},
                            {{"id", "p1"}, {"state", "Configuring"}}}}}));
}

// The series of one metric family whose labels include every one of want.
std::vector<std::string> series(const std::string& text, const std::string& family,
                                const std::vector<std::string>& want) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(family + "{", 0) != 0) continue;
    bool all = true;
    for (const auto& w : want) all = all && line.find(w) != std::string::npos;
    if (all) out.push_back(line);
  }
  return out;
}

TEST_F(HttpApi, MetricsAreServedInPrometheusTextFormat) {
  start(23122);
  Api a = api();
  a.post("/api/v1/apps/c1/fsm/Configure");
  ASSERT_EQ(a.wait_state("c1", "Ready"), "Ready");
  const auto r = a.get("/metrics");
  ASSERT_EQ(r.status, 200) << r.text;
  EXPECT_EQ(r.content_type, "text/plain; version=0.0.4; charset=utf-8");
  const std::string& t = r.text;
  EXPECT_NE(t.find("# HELP daqflow_work_total do_work calls while enabled\n"), std::string::npos)
      << t;
  EXPECT_NE(t.find("# TYPE daqflow_work_total counter\n"), std::string::npos) << t;
  EXPECT_NE(t.find("# TYPE daqflow_probe gauge\n"), std::string::npos) << t;
  const std::vector<std::string> c1 = {R"(context="ctx")", R"(application="c1")",
                                       R"(type="consumer")", R"(run="1")"};
  const auto work = series(t, "daqflow_work_total", c1);
  ASSERT_EQ(work.size(), 1u) << t;
  EXPECT_EQ(work[0].substr(work[0].rfind(' ')), " 0");
  const auto probe = series(t, "daqflow_probe", c1);
  ASSERT_EQ(probe.size(), 1u) << t;
  EXPECT_EQ(probe[0].substr(probe[0].rfind(' ')), " 42");
  // One series per state: 1 for the state the application is in.
  auto state = c1;
  state.push_back(R"(state="Ready")");
  const auto ready = series(t, "daqflow_application_state", state);
  ASSERT_EQ(ready.size(), 1u) << t;
  EXPECT_EQ(ready[0].substr(ready[0].rfind(' ')), " 1");
  EXPECT_EQ(series(t, "daqflow_application_state", c1).size(), 10u);
  const auto p1 =
      series(t, "daqflow_application_state", {R"(application="p1")", R"(state="Halted")"});
  ASSERT_EQ(p1.size(), 1u) << t;
  EXPECT_EQ(p1[0].substr(p1[0].rfind(' ')), " 1");
  EXPECT_TRUE(series(t, "daqflow_work_total", {R"(application="o1")"}).empty())
      << "only this context's applications";

  EXPECT_EQ(a.post("/metrics").status, 405);
}

TEST(HttpApiHistory, MetricsAreSampledIntoAHistoryReadBySeriesAndTime) {
  ClusterConfig c = two_contexts(23123);
  c.monitoring.interval_ms = 50;
  auto exec = start_executive(c, {"ctx"});
  ASSERT_TRUE(exec);
  Api a(23123);
  a.post("/api/v1/apps/c1/fsm/Configure");
  ASSERT_EQ(a.wait_state("c1", "Ready"), "Ready");
  const std::string path = "/api/v1/history?app=c1&metric=probe";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  Reply r;
  do {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    r = a.get(path);
  } while ((r.status != 200 || r.body.at("t").size() < 3) &&
           std::chrono::steady_clock::now() < deadline);
  ASSERT_EQ(r.status, 200) << r.text;
  EXPECT_EQ(r.body.at("app"), "c1");
  EXPECT_EQ(r.body.at("metric"), "probe");
  const auto t = r.body.at("t").get<std::vector<std::int64_t>>();
  const auto v = r.body.at("v").get<std::vector<double>>();
  ASSERT_GE(t.size(), 3u);
  ASSERT_EQ(v.size(), t.size());
  EXPECT_TRUE(std::is_sorted(t.begin(), t.end()));
  for (const double x : v) EXPECT_EQ(x, 42.0);
  // Only what came after since: a client asks for what it has not seen.
  const auto later = a.get(path + "&since=" + std::to_string(t.back()));
  ASSERT_EQ(later.status, 200);
  for (const auto& x : later.body.at("t")) EXPECT_GT(x.get<std::int64_t>(), t.back());

  const auto list = a.get("/api/v1/history");
  ASSERT_EQ(list.status, 200);
  EXPECT_EQ(list.body.at("interval_ms"), 50);
  EXPECT_EQ(list.body.at("max_series"), 256);
  EXPECT_NE(std::find(list.body.at("series").begin(), list.body.at("series").end(),
                      json{{"app", "c1"}, {"metric", "work"}}),
            list.body.at("series").end())
      << list.body.dump();

  EXPECT_EQ(a.get("/api/v1/history?app=c1").status, 400);
  EXPECT_EQ(a.get("/api/v1/history?app=c1&metric=nope").status, 404);
  const auto bad = a.get(path + "&since=yesterday");
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.body.at("error").get<std::string>().find("'since' must be an integer"),
            std::string::npos);
  // Percent-encoded query values are decoded.
  EXPECT_EQ(a.get("/api/v1/history?app=%63%31&metric=probe").status, 200);
}

TEST(HttpApiLogs, TheLastLogLinesAndTheAuditOfCommandsAreServed) {
  core::init_logging("ctx", "info");  // the logger with its in-memory ring, as daqflow exec has
  auto exec = start_executive(two_contexts(23124), {"ctx"});
  ASSERT_TRUE(exec);
  Api a(23124);
  const auto started = std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
  a.post("/api/v1/apps/c1/fsm/Configure");
  ASSERT_EQ(a.wait_state("c1", "Ready"), "Ready");
  const auto texts = [&](const std::string& query) {
    std::vector<std::string> out;
    const auto r = a.get("/api/v1/logs" + query);
    EXPECT_EQ(r.status, 200) << r.text;
    for (const auto& l : r.body.at("lines")) out.push_back(l.at("text").get<std::string>());
    return out;
  };
  const auto has = [](const std::vector<std::string>& lines, const std::string& part) {
    return std::any_of(lines.begin(), lines.end(),
                       [&](const std::string& l) { return l.find(part) != std::string::npos; });
  };
  const auto c1 = texts("?app=c1&since=" + std::to_string(started - 1));
  EXPECT_TRUE(has(c1, "c1: Ready")) << ::testing::PrintToString(c1);
  EXPECT_TRUE(has(c1, "audit: POST /api/v1/apps/c1/fsm/Configure from 127.0.0.1:"))
      << ::testing::PrintToString(c1);
  EXPECT_TRUE(has(c1, "-> 202"));
  EXPECT_FALSE(has(texts("?app=p1&since=" + std::to_string(started - 1)), "c1: Ready"));
  EXPECT_FALSE(
      has(texts("?app=c1&level=warning&since=" + std::to_string(started - 1)), "c1: Ready"))
      << "info lines are below warning";
  const auto all = a.get("/api/v1/logs");
  ASSERT_EQ(all.status, 200);
  EXPECT_EQ(all.body.at("kept"), core::kLogRingLines);
  const auto last = all.body.at("lines").back().at("t").get<std::int64_t>();
  const auto later = a.get("/api/v1/logs?since=" + std::to_string(last));
  for (const auto& l : later.body.at("lines")) EXPECT_GT(l.at("t").get<std::int64_t>(), last);
  EXPECT_EQ(a.get("/api/v1/logs?level=loud").status, 400);
  EXPECT_EQ(a.get("/api/v1/logs?app=nobody").status, 404);
}

TEST_F(HttpApi, TheDashboardIsServedAtTheRootWithItsScriptStyleAndPlottingLibrary) {
  start(23125);
  Api a = api();
  const auto page = a.get("/");
  ASSERT_EQ(page.status, 200);
  EXPECT_EQ(page.content_type, "text/html;charset=utf-8");
  EXPECT_NE(page.text.find("<script src=\"ui/dashboard.js\">"), std::string::npos) << page.text;
  const auto script = a.get("/ui/dashboard.js");
  ASSERT_EQ(script.status, 200);
  EXPECT_EQ(script.content_type, "text/javascript;charset=utf-8");
  EXPECT_NE(script.text.find("/api/v1/snapshots"), std::string::npos);
  const auto uplot = a.get("/ui/uPlot.iife.min.js");
  ASSERT_EQ(uplot.status, 200);
  EXPECT_NE(uplot.text.find("uPlot"), std::string::npos);
  EXPECT_GT(uplot.text.size(), 10000u);
  EXPECT_EQ(a.get("/ui/uPlot.min.css").status, 200);
  EXPECT_EQ(a.get("/ui/dashboard.css").status, 200);
  EXPECT_NE(a.get("/ui/uPlot.LICENSE").text.find("MIT"), std::string::npos);
  EXPECT_EQ(a.get("/ui/nothing.js").status, 404);
}

TEST_F(HttpApi, ASnapshotHasEveryApplicationsStateMetricsAndEndpoint) {
  start(23126);
  Api a = api();
  a.post("/api/v1/apps/c1/fsm/Configure");
  ASSERT_EQ(a.wait_state("c1", "Ready"), "Ready");
  const auto r = a.get("/api/v1/snapshot");
  ASSERT_EQ(r.status, 200) << r.text;
  EXPECT_EQ(keys(r.body), (std::set<std::string>{"context", "time_ms", "state", "pid", "run_number",
                                                 "applications"}));
  EXPECT_EQ(r.body.at("context"), "ctx");
  EXPECT_EQ(r.body.at("state"), "Mixed");
  const json& apps = r.body.at("applications");
  ASSERT_EQ(apps.size(), 2u);
  const json& c1 = apps[0];
  EXPECT_EQ(keys(c1), (std::set<std::string>{"id", "type", "rank", "state", "reason",
                                             "state_since_ms", "metrics", "endpoint"}));
  EXPECT_EQ(c1.at("id"), "c1");
  EXPECT_EQ(c1.at("state"), "Ready");
  bool saw_work = false;
  bool saw_probe = false;
  for (const json& m : c1.at("metrics")) {
    EXPECT_EQ(keys(m), (std::set<std::string>{"name", "kind", "unit", "value", "help"}));
    if (m.at("name") == "work") {
      saw_work = true;
      EXPECT_EQ(m.at("kind"), "counter");
    }
    if (m.at("name") == "probe") {
      saw_probe = true;
      EXPECT_EQ(m.at("kind"), "gauge");
      EXPECT_EQ(m.at("value"), 42.0);
    }
  }
  EXPECT_TRUE(saw_work && saw_probe) << c1.dump();
  // The counter type never takes an endpoint (the browser test sees real ones, in
  // tests/integration/test_dashboard.py).
  EXPECT_TRUE(c1.at("endpoint").is_null());
  EXPECT_EQ(apps[1].at("rank"), 1);
}

TEST_F(HttpApi, ContextsListsEveryContextOfTheClusterWithItsAddress) {
  start(23127);
  const auto r = api().get("/api/v1/contexts");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.body, (json{{{"name", "ctx"},
                           {"host", "127.0.0.1"},
                           {"control_port", 23127},
                           {"applications", {"c1", "p1"}}},
                          {{"name", "other"},
                           {"host", "127.0.0.1"},
                           {"control_port", 23177},
                           {"applications", {"o1"}}}}));
}

// The dashboard of one executive shows and drives the whole cluster: requests for another
// context go to its executive, and one that is gone is reported, not waited for.
TEST(HttpApiContexts, AnotherContextIsAskedThroughThisOne) {
  const ClusterConfig c = two_contexts(23128);
  auto here = start_executive(c, {"ctx"});
  ASSERT_TRUE(here);
  auto there = start_executive(c, {"other"});
  ASSERT_TRUE(there);
  Api a(23128);
  const auto apps = a.get("/api/v1/contexts/other/apps");
  ASSERT_EQ(apps.status, 200) << apps.text;
  ASSERT_EQ(apps.body.size(), 1u);
  EXPECT_EQ(apps.body[0].at("id"), "o1");
  EXPECT_EQ(a.get("/api/v1/contexts/ctx/apps").body.size(), 2u) << "this context itself";
  EXPECT_EQ(a.post("/api/v1/contexts/other/apps/o1/fsm/Configure").status, 202);
  EXPECT_EQ(Api(23178).wait_state("o1", "Ready"), "Ready");
  const auto refused = a.put("/api/v1/contexts/other/apps/o1/params", R"({"step": 0})");
  EXPECT_EQ(refused.status, 400) << refused.text;
  EXPECT_EQ(a.get("/api/v1/contexts/other/history?app=o1&metric=work&since=x").status, 400)
      << "the query goes along";
  EXPECT_EQ(a.get("/api/v1/contexts/nowhere/apps").status, 404);
  EXPECT_EQ(a.get("/api/v1/contexts/other/contexts/ctx/apps").status, 400);

  const auto both = a.get("/api/v1/snapshots");
  ASSERT_EQ(both.status, 200) << both.text;
  const json& contexts = both.body.at("contexts");
  ASSERT_EQ(contexts.size(), 2u);
  EXPECT_EQ(contexts[0].at("snapshot").at("context"), "ctx");
  EXPECT_EQ(contexts[1].at("snapshot").at("applications")[0].at("state"), "Ready");

  there.reset();  // the other executive ends
  const auto gone = a.get("/api/v1/contexts/other/apps");
  EXPECT_EQ(gone.status, 502);
  EXPECT_NE(gone.body.at("error").get<std::string>().find("context 'other' at 127.0.0.1:23178"),
            std::string::npos)
      << gone.text;
  const auto one = a.get("/api/v1/snapshots");
  ASSERT_EQ(one.status, 200);
  EXPECT_TRUE(one.body.at("contexts")[0].contains("snapshot"));
  EXPECT_TRUE(one.body.at("contexts")[1].contains("error")) << one.text;
}

// A token in a file of its own, removed at the end of the test.
class TokenFile {
 public:
  explicit TokenFile(const std::string& token) {
    char name[] = "/tmp/daqflow-token-XXXXXX";
    const int fd = ::mkstemp(name);
    path_ = name;
    const std::string text = token + "\n";
    EXPECT_EQ(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
    ::close(fd);
  }
  ~TokenFile() { ::unlink(path_.c_str()); }
  TokenFile(const TokenFile&) = delete;
  TokenFile& operator=(const TokenFile&) = delete;
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(HttpApiAccess, ChangesNeedTheTokenReadsDoNotAndRefusalsAreCounted) {
  const TokenFile token("s3cret-t0ken");
  ClusterConfig c = two_contexts(23129);
  c.access.token_file = token.path();
  auto exec = start_executive(c, {"ctx"});
  ASSERT_TRUE(exec);
  Api a(23129);
  const auto none = a.post("/api/v1/apps/c1/fsm/Configure");
  EXPECT_EQ(none.status, 401) << none.text;
  EXPECT_NE(none.body.at("error").get<std::string>().find("needs the control token"),
            std::string::npos)
      << none.text;
  const std::string raw =
      raw_exchange(23129, "POST /api/v1/shutdown HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
  EXPECT_NE(raw.find("HTTP/1.1 401"), std::string::npos) << raw;
  EXPECT_NE(raw.find("WWW-Authenticate: Bearer realm=\"daqflow\""), std::string::npos) << raw;
  Api wrong(23129);
  wrong.set_token("s3cret-t0keN");
  const auto refused = wrong.put("/api/v1/apps/c1/params", R"({"step": 2})");
  EXPECT_EQ(refused.status, 401);
  EXPECT_NE(refused.body.at("error").get<std::string>().find("wrong token"), std::string::npos);
  EXPECT_EQ(a.get("/api/v1/apps/c1").body.at("state"), "Halted") << "nothing was done";
  EXPECT_EQ(a.get("/api/v1/apps/c1").body.at("params").at("step"), 1);

  const auto context = a.get("/api/v1/context");
  ASSERT_EQ(context.status, 200) << "reads are open";
  EXPECT_EQ(context.body.at("unauthorized_requests"), 3);
  EXPECT_NE(
      a.get("/metrics").text.find("daqflow_control_unauthorized_requests_total{context=\"ctx\"} 3"),
      std::string::npos);

  a.set_token("s3cret-t0ken");
  EXPECT_EQ(a.post("/api/v1/apps/c1/fsm/Configure").status, 202);
  EXPECT_EQ(a.wait_state("c1", "Ready"), "Ready");
}

TEST(HttpApiAccess, ProtectedReadsNeedTheTokenButTheDashboardsFilesDoNot) {
  const TokenFile token("another-token");
  ClusterConfig c = two_contexts(23131);
  c.access.token_file = token.path();
  c.access.protect_reads = true;
  auto exec = start_executive(c, {"ctx"});
  ASSERT_TRUE(exec);
  Api a(23131);
  EXPECT_EQ(a.get("/api/v1/context").status, 401);
  EXPECT_EQ(a.get("/metrics").status, 401);
  EXPECT_EQ(a.get("/api/v1/snapshots").status, 401);
  EXPECT_EQ(a.get("/").status, 200);
  EXPECT_EQ(a.get("/ui/dashboard.js").status, 200);
  a.set_token("another-token");
  EXPECT_EQ(a.get("/api/v1/context").status, 200);
  EXPECT_EQ(a.get("/metrics").status, 200);
}

TEST(HttpApiAccess, AControlPortOpenedBeyondTheLoopbackNeedsAToken) {
  ClusterConfig c = two_contexts(23132);
  c.contexts[0].control_bind = "0.0.0.0";
  ::unsetenv("DAQFLOW_TOKEN");
  auto refused = Executive::create(c, {"ctx"}, test_registry());
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message().find("opens its control port on 0.0.0.0 (control_bind"),
            std::string::npos)
      << refused.error().message();

  ::setenv("DAQFLOW_TOKEN", "from-the-environment", 1);
  auto exec = start_executive(c, {"ctx"});
  ::unsetenv("DAQFLOW_TOKEN");
  ASSERT_TRUE(exec);
  Api a(23132);
  EXPECT_EQ(a.post("/api/v1/fsm/Configure").status, 401);
  a.set_token("from-the-environment");
  EXPECT_EQ(a.post("/api/v1/fsm/Configure").status, 202);

  c.access.token_file = "/nonexistent/daqflow.token";
  auto unreadable = Executive::create(c, {"ctx"}, test_registry());
  ASSERT_FALSE(unreadable);
  EXPECT_NE(unreadable.error().message().find("/nonexistent/daqflow.token"), std::string::npos)
      << unreadable.error().message();
}

// A connection to 127.0.0.1:port that has sent `start`; -1 when it could not be made.
int connect_and_send(std::uint16_t port, const std::string& start) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::send(fd, start.data(), start.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(start.size())) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// What the server sent until it closed the connection (or `limit` passed).
std::string read_to_close(int fd, std::chrono::milliseconds limit) {
  timeval tv{static_cast<time_t>(limit.count() / 1000),
             static_cast<suseconds_t>(limit.count() % 1000 * 1000)};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  std::string got;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    got.append(buf, static_cast<std::size_t>(n));
  }
  return got;
}

const std::string kUnfinished = "GET /api/v1/context HTTP/1.1\r\nHost: x\r\nX-Slow: ";

// A client that trickles its request never holds anything but its socket: the whole request
// must come within the request timeout, and meanwhile the port answers others at once.
TEST(HttpApiLimits, AClientTricklingItsRequestIsAnswered408AtTheRequestDeadline) {
  ExecutiveOptions options;
  options.control_limits.request_timeout = std::chrono::milliseconds(1500);
  auto exec = start_executive(two_contexts(23133), {"ctx"}, options);
  ASSERT_TRUE(exec);
  const int fd = connect_and_send(23133, kUnfinished);
  ASSERT_GE(fd, 0);
  const auto began = std::chrono::steady_clock::now();
  std::string answer;
  while (std::chrono::steady_clock::now() - began < std::chrono::seconds(30)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    EXPECT_EQ(Api(23133).get("/api/v1/context").status, 200) << "the port serves others";
    char buf[512];
    const ssize_t n = ::recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n > 0) answer.append(buf, static_cast<std::size_t>(n));
    if (n == 0 || ::send(fd, "a", 1, MSG_NOSIGNAL) != 1) break;
  }
  answer += read_to_close(fd, std::chrono::milliseconds(2000));
  ::close(fd);
  const auto open_for = std::chrono::steady_clock::now() - began;
  EXPECT_EQ(answer.rfind("HTTP/1.1 408", 0), 0u) << answer;
  EXPECT_NE(answer.find(R"({"error":"request not complete within 1500 ms"})"), std::string::npos)
      << answer;
  EXPECT_GE(open_for, std::chrono::milliseconds(1500)) << "not before the deadline";
  EXPECT_EQ(Api(23133).get("/api/v1/context").body.at("control_port_stats").at("timed_out"), 1);
}

// Past the connections allowed from one address, a newcomer is refused (503) and those already
// open are served on.
TEST(HttpApiLimits, ANewcomerPastTheLimitPerAddressIsRefusedAndTheOthersServed) {
  ExecutiveOptions options;
  options.control_limits.connections_per_address = 4;
  auto exec = start_executive(two_contexts(23134), {"ctx"}, options);
  ASSERT_TRUE(exec);
  std::vector<int> fds;
  for (int i = 0; i < 4; ++i) fds.push_back(connect_and_send(23134, kUnfinished));
  for (const int fd : fds) ASSERT_GE(fd, 0);
  // The four are accepted (TCP_DEFER_ACCEPT: once their bytes came) before the fifth comes.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const int fifth = connect_and_send(23134, "GET /api/v1/context HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_GE(fifth, 0);
  const std::string refused = read_to_close(fifth, std::chrono::milliseconds(2000));
  ::close(fifth);
  EXPECT_EQ(refused.rfind("HTTP/1.1 503", 0), 0u) << refused;
  EXPECT_NE(refused.find("too many connections: 4 connections open from 127.0.0.1 (limit 4)"),
            std::string::npos)
      << refused;
  for (const int fd : fds) {
    const std::string rest = "1\r\nConnection: close\r\n\r\n";
    ASSERT_EQ(::send(fd, rest.data(), rest.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(rest.size()));
    const std::string answer = read_to_close(fd, std::chrono::milliseconds(2000));
    EXPECT_EQ(answer.rfind("HTTP/1.1 200", 0), 0u) << answer;
    ::close(fd);
  }
  const auto context = Api(23134).get("/api/v1/context");
  EXPECT_EQ(context.status, 200) << "the count went down";
  EXPECT_EQ(context.body.at("control_port_stats").at("refused"), 1);
  EXPECT_NE(Api(23134)
                .get("/metrics")
                .text.find("daqflow_control_connections_refused_total{context=\"ctx\"} 1"),
            std::string::npos);
}

// The Content-Length is checked as soon as the headers are in: the client never has to send the
// body to hear that it is too large.
TEST(HttpApiLimits, AContentLengthOverTheLimitIsAnswered413BeforeAnyBodyByte) {
  ExecutiveOptions options;
  options.control_limits.request_timeout = std::chrono::seconds(60);
  auto exec = start_executive(two_contexts(23135), {"ctx"}, options);
  ASSERT_TRUE(exec);
  const int fd = connect_and_send(23135,
                                  "PUT /api/v1/apps/c1/params HTTP/1.1\r\nHost: x\r\nContent-Type: "
                                  "application/json\r\nContent-Length: 1000000000000\r\n\r\n");
  ASSERT_GE(fd, 0);
  const std::string answer = read_to_close(fd, std::chrono::milliseconds(5000));
  ::close(fd);
  EXPECT_EQ(answer.rfind("HTTP/1.1 413", 0), 0u) << answer;
  EXPECT_NE(answer.find(R"x({"error":"request body too large (limit 1 MiB)"})x"), std::string::npos)
      << answer;
  EXPECT_EQ(Api(23135).get("/api/v1/context").body.at("control_port_stats").at("too_large"), 1);
}

// An idle keep-alive connection costs a descriptor only until the idle timeout.
TEST(HttpApiLimits, AnIdleKeptAliveConnectionIsClosedAfterTheIdleTimeout) {
  ExecutiveOptions options;
  options.control_limits.idle_timeout = std::chrono::milliseconds(300);
  auto exec = start_executive(two_contexts(23136), {"ctx"}, options);
  ASSERT_TRUE(exec);
  const int fd = connect_and_send(23136, "GET /api/v1/context HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_GE(fd, 0);
  const auto began = std::chrono::steady_clock::now();
  const std::string answer = read_to_close(fd, std::chrono::seconds(10));
  const auto open_for = std::chrono::steady_clock::now() - began;
  ::close(fd);
  EXPECT_EQ(answer.rfind("HTTP/1.1 200", 0), 0u) << answer;
  EXPECT_GE(open_for, std::chrono::milliseconds(300));
  EXPECT_LT(open_for, std::chrono::seconds(10)) << "closed by the server, not by the wait";
}

// The executive's main thread stops the control ports as soon as the shutdown is asked for:
// the answer to the request that asked is sent all the same.
TEST(HttpApiShutdown, TheRequestThatAsksForTheShutdownIsAnswered) {
  for (int round = 0; round < 20; ++round) {
    auto exec = start_executive(two_contexts(23137), {"ctx"});
    ASSERT_TRUE(exec);
    std::thread main_thread([&exec] { exec->wait(); });
    const auto r = Api(23137).post("/api/v1/shutdown");
    main_thread.join();
    ASSERT_EQ(r.status, 202) << "round " << round;
  }
}

TEST_F(HttpApi, ShutdownIs202) {
  start(23118);
  const auto r = api().post("/api/v1/shutdown");
  EXPECT_EQ(r.status, 202);
  EXPECT_TRUE(r.body.is_object());
  exec_->wait();
  EXPECT_EQ(api().get("/api/v1/context").status, 0);
}

}  // namespace
}  // namespace daqflow::runtime
