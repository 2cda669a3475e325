#pragma once
// `mcast_sender` and `mcast_receiver`: control traffic from one master to every node by UDP
// multicast with NACK-based retry (mcast_channel.hpp; docs/timeslices.md, "Multicast control
// traffic"). The sender sends numbered messages at a rate; each receiver delivers them in order,
// checks each one's contents, and counts what it lost before the retry and after it. Their
// sockets are their own (not a transport's): they run beside the data flow of any transport.
//
// Threading: as every application; the agent thread owns the sockets.

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>

#include "daqflow/runtime/application.hpp"
#include "mcast_channel.hpp"

namespace daqflow::apps::mcast {

// Both wait on their own socket (wait_for_work); their rounds are the data path's work.
class McastSender final : public runtime::Application {
 public:
  Result<void> configure(runtime::AppContext& ctx) override;
  void begin_halt() override;
  void release() override;
  void wait_for_work(std::chrono::microseconds timeout) override;
  [[nodiscard]] nlohmann::json results() const override;

 private:
  int work(std::int64_t now);

  core::Clock* clock_ = nullptr;
  std::optional<Sender> sender_;
  double rate_hz_ = 0;
  std::uint32_t size_ = 0;
  std::uint64_t count_ = 0;
  std::int64_t linger_ns_ = 0;
  double tokens_ = 0;
  std::int64_t refilled_ns_ = 0;
  std::atomic<std::int64_t> halt_ns_{0};
  std::vector<std::byte> payload_;
  mutable std::mutex mutex_;
  SenderStats stats_;  // a copy for results()
};

class McastReceiver final : public runtime::Application {
 public:
  Result<void> configure(runtime::AppContext& ctx) override;
  void release() override;
  void wait_for_work(std::chrono::microseconds timeout) override;
  [[nodiscard]] nlohmann::json results() const override;
  static void fold_results(nlohmann::json& run, const std::string& id, const nlohmann::json& app);

 private:
  int work(std::int64_t now);

  core::Clock* clock_ = nullptr;
  std::optional<Receiver> receiver_;
  std::uint64_t content_errors_ = 0;
  std::uint64_t next_seq_ = 0;
  std::int64_t halting_since_ns_ = 0;
  mutable std::mutex mutex_;
  ReceiverStats stats_;  // a copy for results()
  std::uint64_t content_errors_copy_ = 0;
};

[[nodiscard]] runtime::AppType mcast_sender_type();
[[nodiscard]] runtime::AppType mcast_receiver_type();

}  // namespace daqflow::apps::mcast
