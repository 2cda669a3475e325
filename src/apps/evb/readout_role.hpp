#pragma once
// The RU half of the `ru` and `evm` applications (the EVM is a RU: same code, composed): the
// fragment source, the readout store, and the posting of blocks to BUs with back-pressure.
//
// Production waits when the store has no free chunk or its event ring is full; the time spent
// waiting is `throttled_ns` (for the EVM, the trigger is held back). A BU whose pipeline is full
// keeps its blocks ready for the next round; a BU that is gone keeps its blocks retained, parked,
// until the EVM re-assigns them.
//
// Threading: configure()/release() on the control thread; everything else on the agent thread,
// except the metric objects, which are atomics.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "daqflow/apps/builders/first_failure.hpp"
#include "daqflow/apps/evb/readout_store.hpp"
#include "daqflow/apps/fed/fragment_source.hpp"
#include "daqflow/runtime/application.hpp"
#include "evb_config.hpp"

namespace daqflow::apps::evb {

// The RU's and the EVM's host needs: the readout store's chunks (chunk_size x chunks), their
// largest send pool (shared memory over shm).
[[nodiscard]] runtime::HostNeeds readout_host_needs(const runtime::ApplicationConfig& app,
                                                    const runtime::ClusterConfig& cluster);

class ReadoutRole {
 public:
  ReadoutRole() = default;
  ~ReadoutRole();
  ReadoutRole(const ReadoutRole&) = delete;
  ReadoutRole& operator=(const ReadoutRole&) = delete;

  // Makes the source and the store for the RU at `position` of the builder; registers metrics.
  Result<void> configure(runtime::AppContext& ctx, const Topology& topology, std::uint32_t position,
                         transport::Endpoint* endpoint, const ReadoutParams& params);
  // Stops the source and drops every reference held (control thread, agent stopped).
  void release();

  // Writes events below limit, up to a budget per call; returns how many. Waiting for memory
  // counts as throttled time; so does waiting at the limit when limit_throttles (the EVM's
  // trigger held back by the builder).
  std::uint32_t produce(std::uint64_t limit, bool limit_throttles = false);
  void on_assign(const wire::Assign& a);
  // The EVM closed every block below `below`: their data may go.
  void on_release(std::uint64_t below);
  // A block in doubt at the EVM (keep) or resolved there (free).
  void on_hold(const wire::Hold& h);
  void on_send_done(transport::AppIndex peer);
  // A BU is gone (its connection failed): nothing more is posted to it.
  void bu_gone(transport::AppIndex bu);
  // A BU the EVM had lost rejoined: blocks may go to it again.
  void bu_back(transport::AppIndex bu);
  // Cuts the blocks whose events are produced and posts what the BUs' pipelines take.
  int send();
  // Copies the counters into the metrics (once per do_work, not per event).
  void publish();
  // What publish() last copied, read from the metrics: for results(), from any thread.
  struct Figures {
    std::uint64_t events_produced = 0, bytes_produced = 0, blocks_cut = 0, throttled_ns = 0;
  };
  [[nodiscard]] Figures figures() const;

  [[nodiscard]] bool failed() const { return failure_.failed(); }
  [[nodiscard]] const std::string& failure() const { return failure_.reason_ref(); }
  [[nodiscard]] std::uint64_t produced() const { return store_ ? store_->produced() : 0; }
  // A produced event's super-fragment, until it is cut into a block.
  [[nodiscard]] std::span<const std::byte> event_bytes(std::uint64_t event) const {
    return store_->event_bytes(event);
  }
  [[nodiscard]] std::uint64_t assigned() const { return store_ ? store_->assigned() : 0; }
  // Nothing to post to a live BU and no post in flight.
  [[nodiscard]] bool idle() const;
  // The store's blocks and the posts to each BU, e.g. "3 blocks held (1 waiting for their
  // events, 1 ready to send, 0 set aside); in flight to 'bu1': 2", for a halt that timed out.
  [[nodiscard]] std::string describe() const;
  [[nodiscard]] bool throttled() const { return throttled_since_ != 0; }
  [[nodiscard]] std::uint64_t throttled_ns() const { return throttled_ns_; }
  [[nodiscard]] fed::FragmentSource* source() const { return source_.get(); }
  [[nodiscard]] ReadoutStore* store() const { return store_.get(); }

 private:
  void add_metrics(runtime::MetricsRegistry& m);
  struct BuState {
    bool is_bu = false;
    bool live = true;
    bool blocked = false;  // back-pressured this round
    std::uint32_t in_flight = 0;
  };
  void set_failure(std::string what);

  std::string id_;
  Topology topology_;
  transport::Endpoint* endpoint_ = nullptr;
  std::unique_ptr<fed::FragmentSource> source_;
  core::Clock* clock_ = nullptr;  // the application's (simulated time in a simulation)
  std::unique_ptr<ReadoutStore> store_;
  std::vector<BuState> bus_;  // by AppIndex
  transport::Message message_;
  FirstFailure failure_;
  std::int64_t throttled_since_ = 0;
  std::uint64_t throttled_ns_ = 0;
  std::uint64_t blocks_out_ = 0;
  std::uint64_t bytes_out_ = 0;

  struct Published {
    std::uint64_t events = 0, bytes = 0, blocks_cut = 0, blocks_out = 0, bytes_out = 0, resent = 0,
                  throttled = 0, fragment_errors = 0;
  } published_;
  runtime::Counter* events_produced_ = nullptr;
  runtime::Counter* bytes_produced_ = nullptr;
  runtime::Counter* blocks_cut_ = nullptr;
  runtime::Counter* messages_out_ = nullptr;
  runtime::Counter* bytes_out_metric_ = nullptr;
  runtime::Counter* blocks_resent_ = nullptr;
  runtime::Counter* throttled_metric_ = nullptr;
  runtime::Counter* fragment_errors_ = nullptr;
  runtime::Gauge* events_held_ = nullptr;
  runtime::Gauge* blocks_retained_ = nullptr;
};

}  // namespace daqflow::apps::evb
