#include <gtest/gtest.h>

#include <thread>

#include "daqflow/control/client.hpp"
#include "daqflow/runtime/http_server.hpp"

namespace daqflow::control {
namespace {

TEST(HostPort, ParsesHostAndPort) {
  const auto hp = parse_host_port("127.0.0.1:9100");
  ASSERT_TRUE(hp.ok());
  EXPECT_EQ(hp->host, "127.0.0.1");
  EXPECT_EQ(hp->port, 9100);
  EXPECT_EQ(hp->str(), "127.0.0.1:9100");
  EXPECT_EQ(parse_host_port("node-7:1")->host, "node-7");
}

TEST(HostPort, RejectsWhatIsNotHostColonPort) {
  for (const char* bad : {"", "9100", ":9100", "host:", "host:0", "host:65536", "host:9x"}) {
    const auto hp = parse_host_port(bad);
    EXPECT_FALSE(hp.ok()) << bad;
    if (!hp.ok()) {
      EXPECT_NE(hp.error().message().find(std::string("'") + bad + "'"), std::string::npos);
    }
  }
}

// A real HTTP server on loopback, answering like an executive would.
class ClientTest : public ::testing::Test {
 protected:
  static runtime::HttpResponse answer(const runtime::HttpRequest& req) {
    using runtime::HttpResponse;
    if (req.method == "GET" && req.target == "/api/v1/context")
      return {200, "application/json", R"({"name": "ru1", "state": "Halted"})", {}};
    if (req.method == "POST" && req.target.rfind("/api/v1/fsm/", 0) == 0) {
      const std::string command = req.target.substr(12);
      if (command == "Enable")
        return {409, "application/json", R"({"error": "Enable not allowed in state Halted"})", {}};
      return {202, "application/json", nlohmann::json{{"command", command}}.dump(), {}};
    }
    if (req.method == "PUT" && req.target == "/api/v1/apps/snk0/params")
      return {200, "application/json", R"({"params": )" + req.body + "}", {}};
    if (req.target == "/text") return {200, "text/plain", "not json", {}};
    if (req.target == "/slow") {
      std::this_thread::sleep_for(std::chrono::milliseconds(600));
      return {200, "application/json", "{}", {}};
    }
    return {404, "application/json", R"({"error": "no such path"})", {}};
  }

  void SetUp() override {
    // Ports 25000-29999 belong to the control tests; take the first free one of a few.
    for (std::uint16_t p = 25900; p < 25950 && !server; ++p) {
      if (auto s = runtime::HttpServer::start("127.0.0.1", p, {}, answer)) {
        server = std::move(*s);
        port = p;
      }
    }
    ASSERT_TRUE(server) << "no free port in 25900-25949";
  }
  void TearDown() override {
    if (server) server->stop();
  }
  ControlClient client() const { return ControlClient(HostPort{"127.0.0.1", port}); }

  std::unique_ptr<runtime::HttpServer> server;
  std::uint16_t port = 0;
};

TEST_F(ClientTest, GetReturnsTheJsonBody) {
  const auto ctx = client().get("/api/v1/context");
  ASSERT_TRUE(ctx.ok()) << ctx.error().message();
  EXPECT_EQ((*ctx)["name"], "ru1");
}

TEST_F(ClientTest, PostAndPutSendJson) {
  const auto answer = client().post("/api/v1/fsm/Configure");
  ASSERT_TRUE(answer.ok()) << answer.error().message();
  EXPECT_EQ((*answer)["command"], "Configure");
  const auto params = client().put("/api/v1/apps/snk0/params", {{"verify", true}});
  ASSERT_TRUE(params.ok());
  EXPECT_EQ((*params)["params"]["verify"], true);
}

TEST_F(ClientTest, AnHttpErrorCarriesTheStatusAndTheExecutivesText) {
  const auto answer = client().post("/api/v1/fsm/Enable");
  ASSERT_FALSE(answer.ok());
  const std::string expected =
      "127.0.0.1:" + std::to_string(port) +
      ": POST /api/v1/fsm/Enable: HTTP 409: Enable not allowed in state Halted";
  EXPECT_EQ(answer.error().message(), expected);

  const auto reply = client().call("POST", "/api/v1/fsm/Enable");
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ(reply->status, 409);
  EXPECT_FALSE(reply->success());
}

TEST_F(ClientTest, AnUnknownPathIs404) {
  const auto answer = client().get("/api/v1/nothing");
  ASSERT_FALSE(answer.ok());
  EXPECT_NE(answer.error().message().find("GET /api/v1/nothing: HTTP 404"), std::string::npos);
}

TEST_F(ClientTest, ABodyThatIsNotJsonReadsAsNull) {
  const auto answer = client().get("/text");
  ASSERT_TRUE(answer.ok());
  EXPECT_TRUE(answer->is_null());
}

TEST_F(ClientTest, NoServerIsAnErrorNamingTheAddress) {
  server->stop();
  const auto answer = client().get("/api/v1/context");
  ASSERT_FALSE(answer.ok());
  EXPECT_EQ(answer.error().message().rfind(
                "127.0.0.1:" + std::to_string(port) + ": GET /api/v1/context: ", 0),
            0u)
      << answer.error().message();
}

TEST_F(ClientTest, NoServerIsUnavailableNotSlow) {
  server->stop();
  const auto answer = client().get("/api/v1/context");
  ASSERT_FALSE(answer.ok());
  EXPECT_EQ(answer.error().code(), ErrorCode::unavailable) << answer.error().message();
}

// The controller tells slow from silent by this: a request taken but not answered in time.
TEST_F(ClientTest, ARequestTakenButNotAnsweredInTimeIsTimedOut) {
  const ControlClient impatient =
      client().with_timeouts(std::chrono::milliseconds(1000), std::chrono::milliseconds(200));
  const auto answer = impatient.get("/slow");
  ASSERT_FALSE(answer.ok());
  EXPECT_EQ(answer.error().code(), ErrorCode::timed_out) << answer.error().message();
  EXPECT_TRUE(client().get("/slow").ok());  // the same request, given the time
}

}  // namespace
}  // namespace daqflow::control
