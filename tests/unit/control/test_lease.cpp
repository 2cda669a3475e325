#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "daqflow/control/lease.hpp"
#include "daqflow/runtime/http_server.hpp"

namespace daqflow::control {
namespace {

using namespace std::chrono_literals;

// An executive's control port that counts lease renewals; `hold` makes each answer wait until
// `release(...)` says so (an executive busy configuring on a loaded host).
class LeasedExecutive {
 public:
  explicit LeasedExecutive(int first_port) {
    const auto renew = [this](const runtime::HttpRequest& req) -> runtime::HttpResponse {
      if (req.method != "POST" || req.target != "/api/v1/lease")
        return {404, "application/json", R"({"error": "no such path"})", {}};
      std::unique_lock lock(mutex_);
      ++renewals_;
      cv_.notify_all();
      if (held_) cv_.wait_for(lock, 10s, [this] { return !held_; });
      return {200, "application/json", R"({"run": {"stop_requested": false}})", {}};
    };
    // Ports 25000-29999 belong to the control tests.
    for (int p = first_port; p < first_port + 10 && !server_; ++p) {
      if (auto s =
              runtime::HttpServer::start("127.0.0.1", static_cast<std::uint16_t>(p), {}, renew)) {
        server_ = std::move(*s);
        port_ = p;
      }
    }
  }
  ~LeasedExecutive() {
    release();
    if (server_) server_->stop();
  }
  LeasedExecutive(const LeasedExecutive&) = delete;
  LeasedExecutive& operator=(const LeasedExecutive&) = delete;

  [[nodiscard]] bool bound() const { return port_ != 0; }
  [[nodiscard]] ControlClient client() const {
    return ControlClient(HostPort{"127.0.0.1", static_cast<std::uint16_t>(port_)}, 1000ms, 30s);
  }
  void hold() {
    std::lock_guard lock(mutex_);
    held_ = true;
  }
  void release() {
    {
      std::lock_guard lock(mutex_);
      held_ = false;
    }
    cv_.notify_all();
  }
  // Waits (at most `limit`) until `count` renewals have come; whether they did.
  bool wait_for_renewals(int count, std::chrono::seconds limit) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, limit, [&] { return renewals_ >= count; });
  }
  [[nodiscard]] int renewals() {
    std::lock_guard lock(mutex_);
    return renewals_;
  }

 private:
  std::unique_ptr<runtime::HttpServer> server_;
  int port_ = 0;
  std::mutex mutex_;
  std::condition_variable cv_;
  int renewals_ = 0;
  bool held_ = false;
};

TEST(LeaseKeeper, RenewsEveryLease) {
  LeasedExecutive a(25950), b(25960);
  ASSERT_TRUE(a.bound() && b.bound());
  const LeaseKeeper keeper({a.client(), b.client()}, 50ms);
  EXPECT_TRUE(a.wait_for_renewals(3, 10s));
  EXPECT_TRUE(b.wait_for_renewals(3, 10s));
  EXPECT_FALSE(keeper.stop_requested());
}

// The controller adds each executive as it starts it: renewed from then on, beside the others.
TEST(LeaseKeeper, AnExecutiveAddedLaterIsRenewedToo) {
  LeasedExecutive a(25950), b(25960);
  ASSERT_TRUE(a.bound() && b.bound());
  LeaseKeeper keeper({a.client()}, 50ms);
  ASSERT_TRUE(a.wait_for_renewals(2, 10s));
  EXPECT_EQ(b.renewals(), 0);
  keeper.add(b.client());
  EXPECT_TRUE(b.wait_for_renewals(3, 10s));
  EXPECT_TRUE(a.wait_for_renewals(a.renewals() + 2, 10s));
}

// One executive that holds its answer must not hold up the others' renewals: while `slow` keeps
// its first renewal unanswered, `fast` is renewed again and again.
TEST(LeaseKeeper, ASlowAnswerDelaysNoOtherLease) {
  LeasedExecutive slow(25970), fast(25980);
  ASSERT_TRUE(slow.bound() && fast.bound());
  slow.hold();
  const LeaseKeeper keeper({slow.client(), fast.client()}, 50ms);
  ASSERT_TRUE(slow.wait_for_renewals(1, 10s));
  EXPECT_TRUE(fast.wait_for_renewals(5, 5s))
      << "renewals of the fast executive while the slow one held its answer: " << fast.renewals();
  EXPECT_EQ(slow.renewals(), 1);  // still waiting on its first answer
  slow.release();
}

}  // namespace
}  // namespace daqflow::control
