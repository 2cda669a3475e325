#pragma once
// `evm`: the event manager of the two-stage event builder (docs/event-builder.md). It is a RU
// (ReadoutRole: its own FEDs, its own blocks) that also owns the trigger and the assignment of
// blocks to BUs (EventManager). Each event its emulator writes is one trigger; trigger_rate_hz
// limits them with a token bucket on the monotonic clock, and back-pressure (no free chunk, i.e.
// BUs not keeping up) holds the trigger back, counted in throttled_ns.
//
// BU loss: a BU's connection failing, or no message from it for heartbeat_timeout_ms while the
// EVM is enabled, loses it: its blocks not granted for writing go to the surviving BUs
// (generation + 1), the run goes on, and the lost BU is named in the results. It is fenced: any
// later commit request of a block taken from it is refused, and it is told so (fence); once it
// rejoins under the new epoch it is served again. Granted blocks of a BU with a file output stay
// its own, in doubt, held at the RUs, until it acknowledges them (EventManager). With no BU
// left the EVM fails.
//
// Rates: event_rate_hz and throughput_mb_s come from samples of the built events every 200 ms,
// the first and the last interval dropped, or over the whole enabled time when the run is too
// short for that.
//
// Halt: the trigger stops, what was triggered is assigned (a final partial block is allowed),
// and drained() turns true once events_in_flight is 0. The accounting invariant is checked after
// every batch of acks; a violation fails the EVM with the counts.
//
// Threading: as every application (runtime/application.hpp); results() reads atomics and, under
// a mutex, the list of lost BUs.

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "daqflow/apps/builders/control_log.hpp"
#include "daqflow/apps/evb/event_manager.hpp"
#include "daqflow/apps/sampler.hpp"
#include "daqflow/runtime/application.hpp"
#include "evb_config.hpp"
#include "readout_role.hpp"

namespace daqflow::apps::evb {

class EventManagerApp final : public runtime::ApplicationWith<EventManagerApp, EvmSettings> {
 public:
  Result<void> setup(runtime::AppContext& ctx, const EvmSettings& s) override;
  Result<void> enable() override;
  void release() override;

  [[nodiscard]] nlohmann::json results() const override;
  [[nodiscard]] static runtime::HostNeeds host_needs(const runtime::ApplicationConfig& app,
                                                     const runtime::ClusterConfig& cluster) {
    return readout_host_needs(app, cluster);
  }
  // in_doubt: the blocks granted to lost BUs and not acknowledged ({blocks: [{block,
  // first_event, events, generation, bu}]}); resolve {bu, written: [block ids], not_written:
  // [block ids]}: what the lost BU's salvaged output holds (docs/reliability.md).
  [[nodiscard]] Result<nlohmann::json> action(std::string_view name,
                                              const nlohmann::json& args) override;

  // The run's event-builder figures: events_*, bytes_built, event_rate_hz, throughput_mb_s,
  // lost_bus (from the EVM).
  static void fold_results(nlohmann::json& run, const std::string& id, const nlohmann::json& app);

 private:
  // Handlers, timers, work and the drained predicate on the data path.
  // Configure, after the topology, the block table and the readout: the peers; the metrics;
  // the run's state; the handlers.
  [[nodiscard]] Result<void> connect_peers();
  void add_metrics(runtime::MetricsRegistry& m);
  void reset_run();
  void register_handlers(runtime::DataPath& path);
  void on_request(transport::AppIndex bu, const wire::EventRequest& r, std::int64_t now);
  void on_heartbeat(transport::AppIndex bu, const wire::Heartbeat& h, std::int64_t now);
  void on_commit_request(transport::AppIndex bu, const wire::BlockAck& a, std::int64_t now);
  void on_ack(transport::AppIndex bu, const wire::BlockAck& a, std::int64_t now);
  void on_leave(transport::AppIndex bu, const wire::Fence& f, std::int64_t now);
  void on_rejoin(transport::AppIndex bu, const wire::Fence& f, std::int64_t now);
  int work(std::int64_t now);
  // What the halt still waits for (agent thread).
  [[nodiscard]] std::string describe_in_flight() const;
  // keep_granted: see EventManager::lose (a BU that left).
  void lose_bu(transport::AppIndex bu, const std::string& why, bool keep_granted = false);
  // After the EventManager has lost bu: stop sending to it, record it, fail if none is left.
  // Tells a BU its epoch (its requests under an older one are refused).
  void fence(transport::AppIndex bu);
  void on_lost(transport::AppIndex bu, const std::string& why, std::size_t orphans);
  [[nodiscard]] std::uint64_t trigger_limit(std::int64_t now);
  // Back-pressure: the trigger runs no further ahead of the assignments than the RUs produce.
  [[nodiscard]] std::uint64_t lookahead_limit() const {
    return evm_->assigned() + topology_.lookahead_events;
  }
  void reply(transport::AppIndex bu, wire::MessageType type, std::uint64_t tag,
             std::span<const std::byte> payload);
  int hold_aside();
  int apply_resolutions();
  void publish_doubt();
  int release_closed();
  int assign(bool flush);
  // Resolutions, releases, assignments and the blocks they let this readout send, and the
  // answers to the BUs: what the messages of a round ask for.
  int answer(bool halting);
  // Reads the id of each new event (its first FED's L1 id, with CMS numbering) and its
  // luminosity section, and tells the event manager where a run of consecutive ids begins.
  void note_ids(std::int64_t now);
  void publish();

  Topology topology_;
  transport::Endpoint* endpoint_ = nullptr;
  core::Clock* clock_ = nullptr;
  ReadoutRole role_;
  std::unique_ptr<EventManager> evm_;
  ControlLog assigns_;                      // to the RUs: assign, release, hold
  ControlLog replies_;                      // to the BUs: commit, fence
  std::vector<AsideChange> aside_changes_;  // scratch
  std::vector<transport::AppIndex> gone_;   // scratch, reserved
  double rate_hz_ = 0;
  std::int64_t token_ns_ = 0;  // a token's worth of time at rate_hz_
  // Event ids and luminosity sections (note_ids()): events up to ids_seen_ are known to the
  // event manager.
  std::int64_t lumi_ns_ = 0;
  std::uint64_t lumi_events_ = 0;
  fed::CmsEventSequence sequence_;
  std::uint64_t ids_seen_ = 0;
  std::uint64_t last_id_ = 0;
  std::uint32_t last_lumi_ = 0;
  std::int64_t heartbeat_timeout_ns_ = 0;

  // Agent thread (the sampler's samples are read by results()).
  ThroughputSampler sampler_;  // bytes and events built, for steady-state rates
  bool watching_ = false;
  double tokens_ = 0;
  std::int64_t refilled_ns_ = 0;
  std::int64_t next_check_ns_ = 0;
  std::uint64_t released_ = 0;  // the RUs were told that every block below it is closed
  // Metrics, published from the EventManager's figures and read by results().
  struct Published {
    std::uint64_t triggered = 0, assigned = 0, built = 0, incomplete = 0, reassigned = 0,
                  blocks = 0, bytes = 0, fenced = 0;
  } published_;
  runtime::Counter* events_triggered_ = nullptr;
  runtime::Counter* events_assigned_ = nullptr;
  runtime::Counter* events_built_ = nullptr;
  runtime::Counter* events_incomplete_ = nullptr;
  runtime::Counter* events_reassigned_ = nullptr;
  runtime::Counter* blocks_assigned_ = nullptr;
  runtime::Counter* bytes_built_ = nullptr;
  runtime::Gauge* events_in_flight_ = nullptr;
  runtime::Gauge* events_lost_ = nullptr;
  runtime::Gauge* events_in_doubt_ = nullptr;
  runtime::Counter* commits_fenced_ = nullptr;
  runtime::Gauge* bus_alive_ = nullptr;

  // Shared with other threads.
  std::atomic<std::int64_t> enabled_ns_{0};
  std::atomic<std::int64_t> last_built_ns_{0};
  mutable std::mutex lost_mutex_;
  std::vector<std::string> lost_bus_;      // guarded by lost_mutex_
  std::vector<std::string> rejoined_bus_;  // guarded by lost_mutex_
  mutable std::mutex doubt_mutex_;
  std::vector<EventManager::DoubtBlock> doubt_;              // guarded by doubt_mutex_
  std::vector<std::pair<std::uint64_t, bool>> resolutions_;  // guarded by doubt_mutex_
  std::vector<std::pair<std::uint64_t, bool>> resolving_;    // agent's scratch
};

[[nodiscard]] runtime::AppType evm_type();

}  // namespace daqflow::apps::evb
