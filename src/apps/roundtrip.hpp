#pragma once
// `roundtrip`: the round-trip benchmark (as XDAQ's RoundTrip). Two applications, an initiator
// and a responder, name each other with `peer`.
//
// The responder echoes every ping back to the initiator as a pong of the same size and tag,
// re-sending the received segments themselves (zero copy). It answers from Configure on, so the
// order in which the two are enabled does not matter; it is finished once it has echoed the
// ping flagged as the sweep's last.
//
// The initiator, once enabled, sweeps sizes min_size, 2*min_size, ... up to max_size (max_size
// itself is always measured), with one message in flight: first, round trips of the first size
// until the timing has settled (settle_ms, below), then per size `warmup` round trips that are
// not recorded, then `iterations` timed with core::monotonic_ns. Per size it reports the median,
// p99, minimum and mean round-trip time; tau = RTT / 2 is the one-way transport time, and
// tau(P) = c * P + tau0 is fitted over the sizes >= fit_min_size (daqflow/apps/stats.hpp).
// Sample arrays are allocated at Configure; the data path does not allocate.

#include <array>
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "app_support.hpp"
#include "daqflow/apps/stats.hpp"
#include "daqflow/core/buffer_pool.hpp"
#include "daqflow/runtime/settings.hpp"

namespace daqflow::apps {

struct RoundTripSettings {
  static const runtime::SettingsSpec<RoundTripSettings>& spec();  // roundtrip.settings.yaml

  std::string peer;
  std::string role;  // initiator or responder
  std::uint64_t min_size = 0;
  std::uint64_t max_size = 0;
  std::uint64_t iterations = 0;
  std::uint64_t warmup = 0;
  std::int64_t settle_ms = 0;
  std::uint64_t fit_min_size = 0;
  std::uint64_t fit_max_size = 0;  // 0: no bound
};

class RoundTrip final : public runtime::ApplicationWith<RoundTrip, RoundTripSettings> {
 public:
  Result<void> setup(runtime::AppContext& ctx, const RoundTripSettings& s) override;
  void release() override;

  [[nodiscard]] nlohmann::json results() const override;

  // Copies the initiator's "fit" and "points" into the run's results.
  static void fold_results(nlohmann::json& run, const std::string& id, const nlohmann::json& app);

 private:
  [[nodiscard]] Result<void> open_endpoint(runtime::AppContext& ctx);
  void add_metrics(runtime::MetricsRegistry& m);

  // Responder: pongs that could not be posted yet (back-pressure, connection not up).
  static constexpr std::size_t kPendingPongs = 16;

  void register_handlers(runtime::DataPath& path);
  int initiator_work();
  int responder_work();
  bool post_ping();
  void on_pong(transport::Completion& c, std::int64_t now_ns);
  // Settling: one more round trip of the first size (settling_ false once settled).
  void settle(std::int64_t rtt_ns, std::int64_t now_ns);
  void on_ping(transport::Completion& c);
  // Counts an arrival; false (the application failed) when it came from another peer than ours.
  bool from_peer(const transport::Completion& c, const char* what);
  int flush_pongs();
  void peer_lost(const std::string& why);

  // Configuration.
  transport::AppIndex self_ = 0;
  transport::AppIndex peer_ = 0;
  std::string peer_id_;
  bool initiator_ = false;
  std::uint64_t warmup_ = 0;
  std::int64_t settle_ns_ = 0;
  std::uint64_t iterations_ = 0;
  std::uint64_t fit_min_size_ = 0;
  std::uint64_t fit_max_size_ = 0;
  std::vector<std::uint64_t> sizes_;

  // Owned between configure and release; agent thread.
  transport::Endpoint* endpoint_ = nullptr;
  core::BufferPool* pool_ = nullptr;  // initiator: ping buffers (the data path's)
  std::vector<std::int64_t> rtt_ns_;  // iterations_ samples of the current size
  std::size_t size_index_ = 0;
  std::uint64_t round_ = 0;  // round trips done at the current size, warm-up included
  std::uint64_t tag_ = 0;    // tag of the last ping
  bool awaiting_ = false;    // a ping is out
  std::int64_t sent_ns_ = 0;
  // Settling before the first size: windows of kSettleWindow round trips, compared in turn.
  static constexpr std::size_t kSettleWindow = 64;
  bool settling_ = false;
  std::int64_t settle_start_ns_ = 0;
  std::array<std::int64_t, kSettleWindow> window_{};
  std::size_t window_count_ = 0;
  std::int64_t previous_median_ns_ = -1;
  std::atomic<std::uint64_t> settle_round_trips_{0};
  std::atomic<std::int64_t> settle_took_ns_{0};
  std::atomic<bool> settled_{false};  // false after the time cap: the medians never agreed
  std::array<transport::Message, kPendingPongs> pending_{};
  std::size_t pending_head_ = 0;
  std::size_t pending_count_ = 0;
  bool last_echoed_ = false;  // responder: the last ping was echoed (pong posted)
  // Metrics, counted by the agent thread and read by results().
  runtime::Counter* messages_out_ = nullptr;
  runtime::Counter* bytes_out_ = nullptr;
  runtime::Counter* messages_in_ = nullptr;
  runtime::Counter* bytes_in_ = nullptr;
  runtime::Gauge* size_gauge_ = nullptr;

  // Shared with other threads. points_[0, points_done_) are final.
  std::vector<SizePoint> points_;
  std::atomic<std::size_t> points_done_{0};
  std::atomic<std::uint32_t> in_flight_{0};
};

[[nodiscard]] runtime::AppType roundtrip_type();

}  // namespace daqflow::apps
