#pragma once
// Clock synchronisation by round trips (docs/timeslices.md): `clock_master` measures each node's
// clock against its own every `interval_ms` (a round of `probes` round trips, one after the other,
// keeping the one of lowest delay), fits offset and drift over a window of rounds (ClockEstimator),
// sends each node its correction (shift and scale) and reports the estimated precision per node.
// `clock_client` answers the probes with its local clock and applies the corrections to the
// process's clock (core::synced_clock()), which every application of its context reads; it may
// distort its local clock by a known offset and drift (tests).
//
// The corrections go over the transport to each node, or, with the master's `multicast` group, by
// UDP multicast to all nodes at once (control traffic mixed with the data), each datagram naming
// its node, with the retry of apps/mcast (NACKs, repairs): a lost correction is recovered, and each
// client counts what it lost before and after the retry.
//
// Threading: as every application; the agent thread owns the rounds.

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "apps/app_support.hpp"
#include "apps/mcast/mcast_channel.hpp"
#include "clock_estimator.hpp"
#include "daqflow/runtime/settings.hpp"

namespace daqflow::apps::clock {

struct ClockMasterSettings {
  static const runtime::SettingsSpec<ClockMasterSettings>& spec();  // clock_master.settings.yaml

  std::vector<std::string> nodes;
  std::int64_t interval_ms = 0;
  std::uint32_t probes = 0;
  std::uint32_t window = 0;
  mcast::MasterGroupSettings multicast;  // group empty: corrections over the transport
};

struct ClockClientSettings {
  static const runtime::SettingsSpec<ClockClientSettings>& spec();  // clock_client.settings.yaml

  std::string master;
  double inject_offset_us = 0;
  double inject_drift_ppm = 0;
  double multicast_drop = 0;
};

class ClockMaster final : public runtime::ApplicationWith<ClockMaster, ClockMasterSettings> {
 public:
  Result<void> setup(runtime::AppContext& ctx, const ClockMasterSettings& s) override;
  void release() override;
  [[nodiscard]] nlohmann::json results() const override;
  // "trips": per node, the round trips the estimate's window holds ({round, probe, delay_ns}),
  // to be matched with the nodes' "legs" where master and nodes share one host's clock.
  [[nodiscard]] Result<nlohmann::json> action(std::string_view name,
                                              const nlohmann::json& args) override;

 private:
  [[nodiscard]] Result<void> open_endpoint(runtime::AppContext& ctx,
                                           const std::vector<std::string>& names);
  void add_metrics(runtime::MetricsRegistry& m);
  void add_handlers();

  // A round's lowest-delay round trip, named for matching with the node's legs.
  struct Trip {
    std::uint32_t round = 0;
    std::uint32_t probe = 0;
    double delay_ns = 0;
  };
  struct Node {
    ClockEstimator estimator;
    std::uint32_t probe = 0;   // next probe of the round
    bool waiting = false;      // a probe is out
    std::int64_t sent_ns = 0;  // when it went out (master clock)
    RoundTrip best;
    std::uint32_t best_probe = 0;
    bool has_best = false;
    std::deque<Trip> window;  // the estimator's rounds, oldest first; guarded by mutex_
    std::uint64_t rounds = 0;
    std::uint64_t replies = 0;
  };

  bool send(transport::AppIndex peer, wire::MessageType type, std::span<const std::byte> bytes);
  // To node n: by multicast when configured (over the transport when the socket is full).
  void send_correction(std::size_t n, std::span<const std::byte> bytes);
  void send_probe(std::size_t n, std::int64_t now);
  void finish_round(std::size_t n);
  void finish_all();
  void next_step(std::int64_t now);
  [[nodiscard]] bool step_waiting(std::int64_t now) const;
  [[nodiscard]] std::size_t total_steps() const { return nodes_.size() * probes_; }
  void on_reply(transport::Completion& c, std::int64_t t4, std::int64_t now);
  int work(std::int64_t now);

  std::vector<transport::AppIndex> nodes_;
  std::int64_t interval_ns_ = 0;
  std::uint32_t probes_ = 0;
  std::vector<std::string> ids_;

  transport::Endpoint* endpoint_ = nullptr;
  core::BufferPool* pool_ = nullptr;  // the data path's
  std::vector<Node> nodes_state_;
  std::uint32_t round_ = 0;
  std::size_t step_ = 0;  // of the round: node step % N, probe step / N
  std::int64_t next_round_ns_ = 0;
  std::size_t window_ = 0;  // rounds in the estimate

  std::optional<mcast::Sender> mcast_;

  runtime::Gauge* worst_precision_ = nullptr;
  runtime::Counter* rounds_ = nullptr;
  runtime::Counter* corrections_unicast_ = nullptr;
  runtime::Counter* messages_malformed_ = nullptr;
  mutable std::mutex mutex_;
  std::vector<ClockEstimate> published_;  // per node, the last estimate
  mcast::SenderStats mcast_stats_;        // a copy for results()
};

class ClockClient final : public runtime::ApplicationWith<ClockClient, ClockClientSettings> {
 public:
  Result<void> setup(runtime::AppContext& ctx, const ClockClientSettings& s) override;
  void release() override;
  [[nodiscard]] nlohmann::json results() const override;
  // "legs": the forward leg (master's send to this node's receive) of the last probes, read
  // against this host's monotonic clock: true only where the master runs on this host (its
  // clock is that clock). With the master's "trips" it splits each round trip into its legs.
  [[nodiscard]] Result<nlohmann::json> action(std::string_view name,
                                              const nlohmann::json& args) override;

 private:
  void add_handlers();

  struct Leg {
    std::uint32_t round = 0;
    std::uint32_t probe = 0;
    std::int64_t forward_ns = 0;
  };
  static constexpr std::size_t kLegsKept = 1024;

  // t2: the probe's arrival on the local clock; received_ns: on this host's monotonic clock.
  void on_probe(transport::Completion& c, std::int64_t t2, std::int64_t received_ns);
  // False: the correction does not decode.
  bool apply(std::span<const std::byte> correction);
  int work(std::int64_t now);
  void on_datagram(std::span<const std::byte> payload);

  transport::AppIndex master_ = 0;
  transport::AppIndex self_ = 0;
  std::optional<mcast::Receiver> mcast_;
  transport::Endpoint* endpoint_ = nullptr;
  core::Clock* clock_ = nullptr;
  core::BufferPool* pool_ = nullptr;  // the data path's
  runtime::Counter* probes_ = nullptr;
  runtime::Counter* corrections_ = nullptr;
  runtime::Counter* messages_malformed_ = nullptr;
  std::atomic<double> drift_ppm_{0};
  mutable std::mutex mutex_;
  mcast::ReceiverStats mcast_stats_;  // a copy for results()
  std::deque<Leg> legs_;              // the last kLegsKept probes; guarded by mutex_
};

[[nodiscard]] runtime::AppType clock_master_type();
[[nodiscard]] runtime::AppType clock_client_type();

}  // namespace daqflow::apps::clock
