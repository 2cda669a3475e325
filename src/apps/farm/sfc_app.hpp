#pragma once
// `sfc`: the sub-farm controller of the filter farm (docs/farm.md). It takes events from its own
// generator (sizes from a distribution, at a rate or as fast as the workers take them), retains
// each until a worker has decided on it, dispatches them under a policy (Dispatcher), and writes
// the accepted events, each with its decision and processed data, into files per stream (an
// accepted event goes to every stream whose trigger mask its trigger bits match; with masks given,
// one that matches none goes to the stream `unrouted`).
//
// Exactly once: a decision counts only from the worker the event was last given to, under the
// epoch it was given under (Dispatcher); the SFC alone writes, so an event is written at most
// once per stream it belongs to. A lost worker (connection failed, or silent for
// heartbeat_timeout_ms) is fenced: its events go to the other workers; when it is heard from again
// it is told its new epoch (fence) and rejoins with a token. With no worker left the SFC fails.
//
// Back-pressure: the generator stops while the queue of events waiting for a token is full, or
// while an output stream has no batch free (the disk is behind).
//
// Halt: the generator stops; drained() once every event is decided and written.
//
// Threading: as every application (runtime/application.hpp); results() reads counters, the
// sampler and the latency histogram, which the agent writes.

#include <array>
#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "apps/app_support.hpp"
#include "daqflow/apps/builders/duplicate_window.hpp"
#include "daqflow/apps/builders/retention.hpp"
#include "daqflow/apps/farm/dispatcher.hpp"
#include "daqflow/apps/output/output.hpp"
#include "daqflow/apps/sampler.hpp"
#include "daqflow/core/latency_histogram.hpp"
#include "daqflow/core/random.hpp"
#include "daqflow/runtime/settings.hpp"

namespace daqflow::apps::farm {

struct SfcSettings {
  static const runtime::SettingsSpec<SfcSettings>& spec();  // sfc.settings.yaml

  std::vector<std::string> workers;
  std::string policy;
  std::uint32_t window = 0;
  std::int64_t busy_threshold = 0;  // 0: window
  std::int64_t free_threshold = 0;  // -1: busy_threshold - 1
  std::uint32_t queue = 0;
  std::int64_t heartbeat_timeout_ms = 0;
  detail::SizeSettings event_size;  // the generator's
  double rate_hz = 0;
  std::uint64_t count = 0;
  std::uint64_t seed = 0;
  std::vector<std::string> inputs;  // empty: the generator
  std::uint32_t input_window = 0;
  nlohmann::json output;
  std::vector<std::int64_t> stream_masks;
};

class SubFarmController final : public runtime::ApplicationWith<SubFarmController, SfcSettings> {
 public:
  Result<void> setup(runtime::AppContext& ctx, const SfcSettings& s) override;
  Result<void> enable() override;
  void release() override;

  void wait_for_work(std::chrono::microseconds timeout) override;

  [[nodiscard]] nlohmann::json results() const override;

  // The run's farm figures: events_decided, events_accepted, farm_events_per_s, lost_workers.
  static void fold_results(nlohmann::json& run, const std::string& id, const nlohmann::json& app);
  // The SFC's process died: finish its streams' unfinished files (the BU's salvage, with no
  // block in doubt: no one else writes its events). Runs in the controller, on its host.
  [[nodiscard]] static Result<runtime::Settled> after_loss(const runtime::LostApp& lost);
  // The disk its output may fill.
  [[nodiscard]] static runtime::HostNeeds host_needs(const runtime::ApplicationConfig& app,
                                                     const runtime::ClusterConfig& cluster) {
    return output::output_host_needs(app, cluster);
  }

 private:
  static constexpr std::size_t kBatchEvents = 32;

  struct Retained {
    transport::Message data;  // the event's bytes: one segment, or a BU's pieces
    std::uint32_t size = 0;
    std::uint32_t flags = 0;
    std::int64_t admitted_ns = 0;
  };
  struct Stream {
    std::string name;
    std::uint64_t mask = 0;  // 0: every accepted event
    bool unrouted = false;   // the events no mask matched
    std::unique_ptr<output::EventOutput> output;
    std::deque<output::OutputBatch> batches;  // grows only when the disk falls behind
    std::vector<output::OutputBatch*> free;
    output::OutputBatch* filling = nullptr;
    std::int64_t filling_since_ns = 0;
    std::uint32_t in_output = 0;
    std::uint64_t written = 0;
    std::uint64_t over_cap = 0;  // the output's events_over_cap counted in returned batches
  };

  struct Pending {  // an event from a BU, not yet admitted
    transport::Message message;
    wire::FarmEvent event;
    std::size_t input = 0;
  };

  // Configure, in order: the peers and the dispatcher; the endpoint and pools; the output
  // streams; the metrics; the run's state; the handlers.
  [[nodiscard]] Result<void> take_peers(runtime::AppContext& ctx, const SfcSettings& s);
  [[nodiscard]] Result<void> open_endpoint(runtime::AppContext& ctx, const SfcSettings& s);
  [[nodiscard]] Result<void> open_streams(runtime::AppContext& ctx, const SfcSettings& s);
  void add_metrics(runtime::MetricsRegistry& m);
  void reset_run(std::uint64_t seed);
  void add_handlers();

  // The data of the event admitted in the dispatcher's slot (a slot free again).
  [[nodiscard]] Retained& retain(std::uint32_t slot);
  void on_heartbeat(const transport::Completion& c, std::int64_t now);
  [[nodiscard]] int work(std::int64_t now);
  // Nothing of the run left anywhere: no event pending, queued, out at a worker or unwritten.
  [[nodiscard]] bool empty() const;
  void on_input(transport::Completion& c, std::size_t input);
  int admit_inputs(std::int64_t now);
  // An output stream has every batch taken and its current one full: hold the input back.
  [[nodiscard]] bool disk_behind() const;
  int send_credits();
  void on_decision(transport::Completion& c, std::int64_t now);
  void on_lost(transport::AppIndex worker, const std::string& why);
  void fence(transport::AppIndex worker);
  int generate(std::int64_t now);
  int dispatch();
  void record(transport::Completion& c, const wire::Decision& d);
  void add_to(Stream& s, core::Buffer buffer, std::uint32_t size, const wire::Decision& d,
              std::int64_t now);
  int flush_outputs(std::int64_t now, bool all);
  void publish();

  // Configuration.
  std::vector<transport::AppIndex> workers_;
  std::vector<transport::AppIndex> inputs_;  // BUs handing events on; empty: the generator
  std::uint32_t input_window_ = 0;
  std::vector<std::string> ids_;
  Policy policy_ = Policy::tokens;
  core::DistSpec size_;
  std::uint32_t max_size_ = 0;
  double rate_hz_ = 0;
  std::uint64_t count_ = 0;
  std::int64_t heartbeat_timeout_ns_ = 0;
  std::size_t slots_ = 0;  // events retained at once: the queue and every worker's window

  // Agent thread.
  transport::Endpoint* endpoint_ = nullptr;
  core::Clock* clock_ = nullptr;
  std::unique_ptr<Dispatcher> dispatcher_;
  core::BufferPool* events_pool_ = nullptr;   // the data path's
  core::BufferPool* control_pool_ = nullptr;  // the data path's
  Retention<Retained> retained_;              // by the dispatcher's slot
  std::vector<Pending> pending_;              // ring
  std::size_t pending_head_ = 0;
  std::size_t pending_count_ = 0;
  std::vector<std::uint64_t> taken_;  // per input: events taken over
  std::vector<bool> credit_due_;      // per input
  DuplicateWindow seen_;              // event numbers taken from inputs
  std::vector<Stream> streams_;
  output::FilesWritten files_written_;  // the streams' outputs', for results()
  core::Xoshiro rng_;
  std::uint64_t next_event_ = 0;
  double tokens_ = 0;
  std::int64_t refilled_ns_ = 0;
  std::int64_t next_check_ns_ = 0;
  bool watching_ = false;
  std::uint64_t bytes_decided_ = 0;
  std::vector<transport::AppIndex> lost_now_;
  ThroughputSampler sampler_;

  // Metrics (results() reports every counter under its name).
  const runtime::MetricsRegistry* metrics_ = nullptr;
  runtime::Counter* events_received_ = nullptr;
  runtime::Counter* events_decided_ = nullptr;
  runtime::Counter* events_accepted_ = nullptr;
  runtime::Counter* events_pushed_ = nullptr;
  runtime::Counter* events_written_ = nullptr;
  runtime::Counter* events_not_written_ = nullptr;
  runtime::Counter* events_redispatched_ = nullptr;
  runtime::Counter* answers_late_ = nullptr;
  runtime::Counter* messages_malformed_ = nullptr;
  runtime::Counter* events_duplicate_ = nullptr;
  runtime::Counter* bytes_out_ = nullptr;
  runtime::Gauge* events_outstanding_ = nullptr;
  runtime::Gauge* events_queued_ = nullptr;
  runtime::Gauge* workers_alive_ = nullptr;
  struct Published {
    std::uint64_t received = 0, decided = 0, accepted = 0, pushed = 0, redispatched = 0, late = 0;
  } published_;

  // Shared with other threads.
  std::unique_ptr<std::atomic<std::uint64_t>[]> decided_by_;  // per worker position
  core::LatencyHistogram latency_;  // event latency, dispatch queue included: admitted to decided
  std::atomic<std::int64_t> enabled_ns_{0};
  mutable std::mutex lost_mutex_;
  std::vector<std::string> lost_workers_;      // guarded by lost_mutex_
  std::vector<std::string> rejoined_workers_;  // guarded by lost_mutex_
};

[[nodiscard]] runtime::AppType sfc_type();

}  // namespace daqflow::apps::farm
