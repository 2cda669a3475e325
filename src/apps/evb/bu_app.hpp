#pragma once
// `bu`: a builder unit of the two-stage event builder (docs/event-builder.md). While enabled it
// keeps blocks_in_flight blocks requested or open at the EVM, gathers each block from every RU
// (BlockBuilder: checks, references to the received buffers, no copy), asks the EVM for the
// right to write it (commit_request), hands it to its output once granted (an output::OutputBatch
// from a pool of blocks_in_flight, reserved at Configure), and once the output is done sends
// block_ack to the EVM (which releases the block at the RUs). A block refused (fenced) is dropped:
// the EVM gave it to another BU. A fence from the EVM (this BU was declared lost) drops everything
// not granted, and the BU rejoins under the fence's epoch (docs/reliability.md). It sends a
// heartbeat to the EVM every heartbeat_ms.
//
// A RU whose part is missing after timeout_ms (or whose connection closed, or could not be made
// again) leaves its events incomplete: they are written flagged, or the BU fails naming the RU
// (on_incomplete: fail). A connection to a RU that fails while the run goes on (a reset link) is
// dialed again for up to timeout_ms, nothing is offered to the EVM meanwhile, and once it is back
// the BU leaves: it tells the EVM (leave) that what it was given cannot be built whole, the EVM
// loses and fences it and re-assigns those blocks, and the BU rejoins. The EVM's connection failing
// while the run goes on is dialed again too: meanwhile nothing goes to the EVM; once back, the BU
// leaves (the EVM, which lost it when the connection failed, answers with a fence), asks again
// about the blocks whose answer may have been lost, sends its last acknowledgements again, and
// rejoins. If the EVM cannot be reached again within 10 s, the BU fails. Halt: no more requests;
// drained once every open block is built, written and acknowledged.
//
// Threading: as every application (runtime/application.hpp); results() reads the metrics.

#include <algorithm>
#include <array>
#include <atomic>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "daqflow/apps/builders/control_log.hpp"
#include "daqflow/apps/evb/block_builder.hpp"
#include "daqflow/apps/output/output.hpp"
#include "daqflow/core/latency_histogram.hpp"
#include "daqflow/runtime/application.hpp"
#include "evb_config.hpp"

namespace daqflow::apps::evb {

class BuilderUnit final : public runtime::ApplicationWith<BuilderUnit, BuSettings> {
 public:
  Result<void> setup(runtime::AppContext& ctx, const BuSettings& s) override;
  void release() override;

  [[nodiscard]] nlohmann::json results() const override;

  [[nodiscard]] static Result<runtime::Settled> after_loss(const runtime::LostApp& lost);
  // The disk its output may fill.
  [[nodiscard]] static runtime::HostNeeds host_needs(const runtime::ApplicationConfig& app,
                                                     const runtime::ClusterConfig& cluster) {
    return output::output_host_needs(app, cluster);
  }

  // events_written summed over BUs, and "bus": {id: events_built}.
  static void fold_results(nlohmann::json& run, const std::string& id, const nlohmann::json& app);

 private:
  struct AckInfo {
    std::uint64_t block_id = 0;
    std::uint32_t generation = 0;
    std::uint32_t built = 0;
    std::uint32_t incomplete = 0;
    std::uint64_t bytes = 0;
    std::uint32_t corrupted = 0;
    std::int64_t asked_ns = 0;  // when the commit request was queued: the grant's lease starts
  };

  // Handlers, timers, work and the drained predicate on the data path.
  // Configure, after the topology and the builder: the endpoint and output; the metrics; the
  // run's state; the handlers.
  [[nodiscard]] Result<void> open_endpoint(runtime::AppContext& ctx, const nlohmann::json& output);
  void add_metrics(runtime::MetricsRegistry& m);
  void reset_run();
  void register_handlers(runtime::DataPath& path);
  void on_part(transport::Completion& c, std::int64_t now);
  void on_peer_gone(transport::AppIndex peer, std::string_view reason, bool rejected);
  int work(std::int64_t now);
  void ru_gone(transport::AppIndex ru, const std::string& why);
  // A RU's connection failed while the run goes on: dial it again and leave (see above).
  void ru_link_lost(transport::AppIndex ru, std::string_view why);
  // Looks at the RU links dialed again: one that is back makes this BU leave. True while any is
  // still down.
  bool check_ru_links();
  [[nodiscard]] bool any_ru_down() const {
    return std::find(ru_down_.begin(), ru_down_.end(), true) != ru_down_.end();
  }
  // Once no RU link is down, pushes what must go to the EVM before anything else: a pending
  // leave, then a pending rejoin. False while a link is down or either still waits.
  bool send_leave_and_rejoin();
  int build(std::int64_t now);
  int finish();
  int ask(std::int64_t now);
  void on_commit(const wire::Commit& c, std::int64_t now);
  void on_fence(const wire::Fence& f, std::int64_t now);
  [[nodiscard]] std::array<std::byte, wire::kBlockAckSize> encode_ack(const AckInfo& info) const;
  bool acknowledge(output::OutputBatch* batch);
  // The EVM's connection failed while the run goes on: dial it again (see above).
  void evm_link_lost(std::string_view why);
  // Whether the EVM's connection is up (again, after evm_link_lost: then this BU leaves).
  bool evm_up();
  void recycle(output::OutputBatch* batch);
  int request(std::int64_t now);
  void publish(std::int64_t now);
  // The output's counts of events written, not written (disk cap) and dropped (incomplete), into
  // events_written_, events_not_written_ and events_dropped_.
  void publish_written();
  [[nodiscard]] std::size_t batch_index(const output::OutputBatch* b) const {
    return static_cast<std::size_t>(b - batches_.data());
  }

  // Configuration.
  Topology topology_;
  std::uint32_t events_per_request_ = 32;
  std::uint32_t window_ = 4;
  bool fail_on_incomplete_ = false;
  std::int64_t heartbeat_ns_ = 200'000'000;
  std::int64_t timeout_ms_ = 2000;
  std::int64_t evm_redial_ms_ = 10000;  // how long a failed EVM link is dialed again

  // Owned between configure and release; agent thread.
  transport::Endpoint* endpoint_ = nullptr;
  core::Clock* clock_ = nullptr;
  std::unique_ptr<BlockBuilder> builder_;
  std::unique_ptr<output::EventOutput> output_;
  output::FilesWritten files_written_;  // the output's, for results()
  ControlLog to_evm_;                   // requests, heartbeats, acks
  std::vector<output::OutputBatch> batches_;
  std::vector<AckInfo> acks_;                      // by batch
  std::vector<output::OutputBatch*> free_;         // batches not in use
  std::vector<output::OutputBatch*> unasked_;      // built, commit not yet requested (queue full)
  std::vector<output::OutputBatch*> awaiting_;     // commit requested, no answer yet
  std::vector<output::OutputBatch*> reask_;        // awaiting when fenced: to be asked about again
  std::vector<output::OutputBatch*> unsubmitted_;  // granted, refused by a full output queue
  std::vector<output::OutputBatch*> unacked_;      // done, waiting for room to send the ack
  std::vector<std::string> ru_lost_why_;           // by RU position; empty while alive
  std::vector<bool> ru_down_;                      // by RU position: its link failed, dialing again
  std::vector<std::int64_t> ru_down_ns_;           // by RU position: since when
  std::vector<transport::AppIndex> gone_;          // scratch, reserved
  std::uint32_t requested_ = 0;   // blocks asked for whose first part has not arrived
  std::uint32_t in_output_ = 0;   // blocks built and not yet acknowledged (or dropped)
  std::uint32_t epoch_ = 0;       // of the last fence; 0 before any
  bool durable_ = false;          // the output keeps what it writes (file)
  bool rejoin_pending_ = false;   // fenced; the rejoin is not queued yet
  bool leave_pending_ = false;    // a RU link was reset; the leave is not queued yet
  bool evm_down_ = false;         // the EVM's connection failed; dialing it again
  std::int64_t evm_down_ns_ = 0;  // since when
  bool reack_pending_ = false;    // the EVM is back: send recent_acks_ again
  // The last acknowledgements pushed (a ring): any of them may have been lost with the EVM's
  // connection; sent again, an ack the EVM already had is counted stale there.
  std::vector<AckInfo> recent_acks_;
  std::size_t recent_next_ = 0;  // acks pushed so far (the ring holds the last of them)
  std::size_t reack_from_ = 0;   // while reack_pending_: the next of them to send again
  std::size_t reack_to_ = 0;     // and the end
  std::uint64_t heartbeat_seq_ = 0;
  std::int64_t next_heartbeat_ns_ = 0;
  std::int64_t next_output_check_ns_ = 0;
  bool warned_corrupt_ = false;
  bool warned_incomplete_ = false;
  std::uint64_t written_published_ = 0;      // the output's events_written already counted
  std::uint64_t not_written_published_ = 0;  // and its events_over_cap
  std::uint64_t dropped_published_ = 0;      // and its events_dropped

  // Metrics, counted by the agent thread and read by results().
  runtime::Counter* events_built_ = nullptr;
  runtime::Counter* events_incomplete_ = nullptr;
  runtime::Counter* events_corrupted_ = nullptr;
  runtime::Counter* events_written_ = nullptr;
  runtime::Counter* events_not_written_ = nullptr;
  runtime::Counter* events_dropped_ = nullptr;
  runtime::Counter* events_fenced_ = nullptr;
  runtime::Counter* grants_late_ = nullptr;
  runtime::Counter* bytes_built_ = nullptr;
  runtime::Counter* blocks_built_ = nullptr;
  runtime::Counter* requests_sent_ = nullptr;
  runtime::Counter* messages_in_ = nullptr;
  runtime::Counter* bytes_in_ = nullptr;
  runtime::Counter* parts_late_ = nullptr;
  runtime::Counter* parts_duplicate_ = nullptr;
  runtime::Gauge* blocks_open_ = nullptr;

  // Shared with other threads.
  // A block's assembly: its first part's arrival to its build (the last part's arrival, or the
  // timeout), the time the network and the slowest RU add to every event.
  core::LatencyHistogram assembly_;
  std::atomic<std::int64_t> first_build_ns_{0};
  std::atomic<std::int64_t> last_build_ns_{0};
};

[[nodiscard]] runtime::AppType bu_type();

}  // namespace daqflow::apps::evb
