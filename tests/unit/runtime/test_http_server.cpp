// The control ports' HTTP server on its own: what it promises when it stops. The limits it
// enforces are checked through the control API (test_http_api.cpp, HttpApiLimits).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "daqflow/runtime/http_client.hpp"
#include "daqflow/runtime/http_server.hpp"

namespace daqflow::runtime {
namespace {

using namespace std::chrono_literals;

const HttpExchange kShutdown{"POST", "/api/v1/shutdown", "", "application/json", ""};
const HttpExchange kGet{"GET", "/", "", "application/json", ""};

// An executive asked to shut down stops its control port at once, while the handler of the
// request that asked is still returning: that answer is sent all the same.
TEST(HttpServer, AnAnswerUnderWayWhenTheServerStopsIsSent) {
  std::atomic<bool> entered{false};
  std::atomic<bool> stopping{false};
  auto server = HttpServer::start("127.0.0.1", 0, {}, [&](const HttpRequest&) {
    entered = true;
    while (!stopping) std::this_thread::sleep_for(1ms);
    std::this_thread::sleep_for(100ms);  // stop() has begun meanwhile
    return HttpResponse{202, "application/json", R"({"shutdown": true})", {}};
  });
  ASSERT_TRUE(server) << server.error().message();
  const std::uint16_t port = (*server)->port();
  Result<HttpReply> reply = Error("not asked");
  std::thread client([&] { reply = HttpClient("127.0.0.1", port).exchange(kShutdown, 1s, 5s); });
  while (!entered) std::this_thread::sleep_for(1ms);
  std::thread stopper([&] {
    stopping = true;
    (*server)->stop();
  });
  client.join();
  stopper.join();
  ASSERT_TRUE(reply) << reply.error().message();
  EXPECT_EQ(reply->status, 202);
  EXPECT_EQ(reply->body, R"({"shutdown": true})");
}

// After stop(), the port refuses: nothing is left listening.
TEST(HttpServer, AStoppedServerListensNoMore) {
  auto server = HttpServer::start("127.0.0.1", 0, {}, [](const HttpRequest&) {
    return HttpResponse{200, "application/json", "{}", {}};
  });
  ASSERT_TRUE(server) << server.error().message();
  const std::uint16_t port = (*server)->port();
  HttpClient client("127.0.0.1", port);
  ASSERT_TRUE(client.exchange(kGet, 1s, 5s));
  (*server)->stop();
  const auto after = HttpClient("127.0.0.1", port).exchange(kGet, 1s, 5s);
  ASSERT_FALSE(after);
  EXPECT_EQ(after.error().code(), ErrorCode::unavailable) << after.error().message();
}

}  // namespace
}  // namespace daqflow::runtime
