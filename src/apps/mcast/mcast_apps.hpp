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

#include "daqflow/runtime/settings.hpp"
#include "mcast_channel.hpp"

namespace daqflow::apps::mcast {

// Both wait on their own socket (wait_for_work); their rounds are the data path's work.
// The group every sender and receiver names.
struct GroupSettings {
  static const runtime::SettingsSpec<GroupSettings>& spec();  // group.settings.yaml

  std::string group;
  std::uint32_t port = 0;
  std::string interface;
  [[nodiscard]] Group to_group() const;
};

struct McastSenderSettings {
  static const runtime::SettingsSpec<McastSenderSettings>& spec();  // mcast_sender.settings.yaml

  GroupSettings group;
  double rate_hz = 0;
  std::uint32_t size = 0;
  std::uint64_t count = 0;  // 0: until halted
  std::uint64_t history = 0;
  std::int64_t linger_ms = 0;
};

struct McastReceiverSettings {
  static const runtime::SettingsSpec<McastReceiverSettings>&
  spec();  // mcast_receiver.settings.yaml

  GroupSettings group;
  double drop_fraction = 0;
  double nack_ms = 0;
  std::uint32_t max_nacks = 0;
  std::uint64_t seed = 0;
};

class McastSender final : public runtime::ApplicationWith<McastSender, McastSenderSettings> {
 public:
  Result<void> setup(runtime::AppContext& ctx, const McastSenderSettings& s) override;
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

class McastReceiver final : public runtime::ApplicationWith<McastReceiver, McastReceiverSettings> {
 public:
  Result<void> setup(runtime::AppContext& ctx, const McastReceiverSettings& s) override;
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
