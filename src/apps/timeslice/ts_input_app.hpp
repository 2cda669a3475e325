#pragma once
// `ts_input`: one input channel of the time-slice builder (docs/timeslices.md). It produces
// microslices of a fixed duration with FLESnet's descriptor, their sizes drawn from a
// distribution and their contents checksummed (CRC-32C), replays recorded ones from timeslice
// archives (`input: {kind: replay}`, microslice_replay.hpp) or takes them from a readout plugin
// (`{kind: plugin}`), in real time or as fast as the builders take them.
// Timeslice k is the microslices of [k * duration, (k + 1) * duration) (its core) and
// the first `overlap` microslices after it; the input sends it to its builder as one
// contribution once the overlap exists, and keeps it until that builder acknowledges it.
//
// Memory: the microslices of one timeslice interval are generated into one buffer of a send pool
// (descriptors, then contents), so a contribution is the header and four pieces of two buffers
// (the core's and the next interval's, for the overlap), sent without a copy; on shm the builder
// reads them in place. Small contributions are copied instead, several to a message
// (ts_batch.hpp). The pool holds `in_flight` + 2 intervals: when every timeslice in it
// waits for an acknowledgement, generation waits (and in real time falls behind, counted).
//
// Assignment: round robin, timeslice k to builder k mod N; a builder that is lost (its
// connection fails) is skipped: k goes to the next live builder after it, and what the lost one
// had not acknowledged is sent again. Every input computes the same choice from the same losses.
//
// Order: `chaotic` sends a contribution as soon as it is ready; `scheduled` is a barrel shifter:
// in time slot s this input (position i among the inputs) sends only to builder (i + s) mod N,
// every contribution it has ready for it, so that no two inputs send to one builder at once;
// slots it slept through are served late, in order, at most one turn of the shifter.
//
// Threading: as every application (runtime/application.hpp); the agent thread owns the data path.

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "apps/app_support.hpp"
#include "apps/fed/readout_plugin.hpp"
#include "apps/output/timeslice_check.hpp"
#include "daqflow/apps/sampler.hpp"
#include "daqflow/core/random.hpp"
#include "daqflow/runtime/settings.hpp"
#include "daqflow/wire/timeslice.hpp"
#include "microslice_replay.hpp"
#include "ts_assign_cast.hpp"
#include "ts_end_vote.hpp"
#include "ts_outbox.hpp"
#include "ts_schedule.hpp"

namespace daqflow::apps::timeslice {

enum class SendOrder : std::uint8_t { chaotic, scheduled };

struct TsInputSettings {
  static const runtime::SettingsSpec<TsInputSettings>& spec();  // ts_input.settings.yaml

  std::vector<std::string> builders;
  double microslice_us = 0;
  double timeslice_us = 0;
  double overlap_us = 0;
  detail::SizeSettings microslice_size;
  std::string pace;
  std::string order;
  double slot_us = 0;
  std::int64_t eq_id = -1;  // -1: the input's position
  std::uint32_t sys_id = 0;
  std::uint32_t sys_ver = 0;
  bool crc = true;
  std::uint32_t in_flight = 0;
  std::int64_t redial_ms = 0;
  std::int64_t end_wait_ms = 0;
  std::uint64_t count = 0;
  std::uint64_t seed = 0;
  std::string manager;  // empty: round robin
  double multicast_drop = 0;
  struct Input {
    std::string kind;  // generator, replay or plugin
    std::string path;  // replay
    std::string library;
    std::string config;
  } input;
};

// A contribution on the wire: its descriptor, then (core + overlap) microslice descriptors and
// contents of up to `microslice_bytes` each.
[[nodiscard]] std::uint64_t contribution_bytes(const Geometry& g, std::uint64_t microslice_bytes);

// The timeslices an input with these settings keeps in flight: its in_flight, or when that is 0
// the automatic window (ts_window.hpp) for its transport and the pipeline depth. Its builders
// size their receive buffers by it.
[[nodiscard]] std::uint32_t in_flight_of(const TsInputSettings& s, const Geometry& g,
                                         std::uint32_t depth, std::string_view transport);

class TsInput final : public runtime::ApplicationWith<TsInput, TsInputSettings> {
 public:
  Result<void> setup(runtime::AppContext& ctx, const TsInputSettings& s) override;
  Result<void> enable() override;
  void release() override;

  void wait_for_work(std::chrono::microseconds timeout) override;
  [[nodiscard]] nlohmann::json results() const override;
  // `sent_again` {builder}: {lost, timeslices}: the timeslices this input had sent to that
  // builder, unacknowledged, and sent to another once it was lost (round robin); what the lost
  // builder's salvage cuts from its files.
  [[nodiscard]] Result<nlohmann::json> action(std::string_view name,
                                              const nlohmann::json& args) override;
  static void fold_results(nlohmann::json& run, const std::string& id, const nlohmann::json& app);

 private:
  // Configure, in order: the peers (returns the intervals kept for timeslices in doubt); the
  // recorded microslices; the endpoint and pools (intervals of them); the metrics; the run's
  // state; the handlers.
  [[nodiscard]] Result<std::uint32_t> take_peers(runtime::AppContext& ctx,
                                                 const TsInputSettings& s);
  [[nodiscard]] Result<void> open_replay(const TsInputSettings& s);
  [[nodiscard]] Result<void> open_plugin(const TsInputSettings& s);
  [[nodiscard]] Result<void> open_endpoint(runtime::AppContext& ctx, std::uint32_t intervals);
  void add_metrics(runtime::MetricsRegistry& m);
  void reset_run(std::uint64_t seed);
  void add_handlers();

  void generate_interval(TsInterval& out);
  // The next recorded interval instead; false (and the application failed) when it cannot be
  // read.
  [[nodiscard]] bool replay_interval(TsInterval& out);
  // The next interval from the readout plugin: false when it is not ready (or failed the
  // application).
  [[nodiscard]] bool plugin_interval(TsInterval& out);
  // Fails the application with what the plugin did wrong in the interval asked.
  void plugin_failed(const std::string& what);
  int generate(std::int64_t now);
  int send(std::int64_t now);
  // The scheduled order in turns (slot_us 0): to each builder only in the turn it gives.
  int send_in_turns(std::int64_t now);
  // A ts_turn to builder b: asking for its turn, or handing it back.
  [[nodiscard]] bool send_turn(std::size_t b, wire::TsTurn turn);
  void on_turn(const transport::Completion& c);
  // Sends t to its builder: alone (by reference), or copied into that builder's batch when it is
  // small (ts_batch.hpp); false when the transport pushes back (t then stays to send).
  [[nodiscard]] bool send_contribution(TsOutbox::Timeslice& t);
  [[nodiscard]] bool send_one(TsOutbox::Timeslice& t);
  // Posts the batch to a builder (nothing when it is empty); false when it could not go (its
  // contributions then stay to send).
  bool flush_batch(std::size_t builder);
  bool flush_batches();
  [[nodiscard]] wire::Contribution header_of(const TsOutbox::Timeslice& t) const;
  void count_sent(std::uint64_t bytes, bool again);
  void on_peer_gone(transport::AppIndex peer, std::string_view reason);
  [[nodiscard]] int work(std::int64_t now);
  void on_ack(const transport::Completion& c);
  void on_assign(const transport::Completion& c);
  void apply_assign(const wire::TsAssign& a);
  // The manager's multicast assignments: read, applied, the run's end echoed to the manager.
  [[nodiscard]] int listen(std::int64_t now);
  void lose_builder(std::size_t position, const std::string& why);
  // A builder's link failed while the builder may live (a reset): dialed again; what it was sent
  // and did not acknowledge goes again once the link is back (check_builder_links), and a builder
  // not back within redial_ms is lost.
  void builder_link_failed(std::size_t position, std::string_view why);
  void check_builder_links(std::int64_t now);
  // The manager's link failed: it dials again within redial_ms, or this input fails.
  void check_manager_link(std::int64_t now);
  // The clock the fixed slots follow (ts_schedule.hpp).
  [[nodiscard]] std::int64_t slot_clock_ns() const { return schedule_clock_ns(*clock_); }

  // Configuration.
  Geometry geometry_;
  std::vector<transport::AppIndex> builders_;
  std::size_t position_ = 0;  // among the inputs of the builders (the barrel shifter's i)
  SendOrder order_ = SendOrder::chaotic;
  std::int64_t slot_ns_ = 0;  // scheduled: fixed slots of slot_us; 0: in turns
  std::int64_t redial_ns_ = 0;
  core::DistSpec size_;
  std::uint32_t max_size_ = 0;
  std::uint16_t eq_id_ = 0;
  std::uint8_t sys_id_ = 0;
  std::uint8_t sys_ver_ = 0;
  bool crc_ = true;
  bool real_time_ = true;
  std::uint64_t count_ = 0;                     // timeslices; 0: until halted
  std::unique_ptr<MicrosliceReplay> replay_;    // recorded microslices instead of generated ones
  std::unique_ptr<fed::ReadoutPlugin> plugin_;  // or a readout plugin's
  std::vector<daqflow_readout_microslice> plugin_slices_;
  bool has_manager_ = false;
  transport::AppIndex manager_ = 0;
  std::uint64_t manager_window_ = 0;        // the manager's window of timeslices
  std::optional<AssignListener> listener_;  // the manager's multicast group, where it has one
  std::uint32_t in_flight_ = 0;
  int intervals_per_round_ = 4;  // made in one round at most
  std::vector<std::string> ids_;

  // Agent thread.
  transport::Endpoint* endpoint_ = nullptr;
  core::Clock* clock_ = nullptr;
  core::BufferPool* data_pool_ = nullptr;    // the data path's
  core::BufferPool* header_pool_ = nullptr;  // the data path's
  // Small contributions copied back to back, by builder, until the batch is full or send()
  // ends (every send() leaves them empty).
  struct Batch {
    core::Buffer buffer;
    std::uint32_t used = 0;
    std::uint64_t first = 0;  // the first contribution's timeslice (the message's tag)
    struct Item {
      TsOutbox::Timeslice* timeslice = nullptr;
      std::uint64_t bytes = 0;
      bool again = false;  // sent before (to another builder)
    };
    std::vector<Item> items;
  };
  std::vector<Batch> batches_;
  core::BufferPool* batch_pool_ = nullptr;  // the data path's; none: no batches
  std::uint32_t batch_bytes_ = 0;
  core::Xoshiro rng_;
  TsOutbox outbox_;  // made, not acknowledged
  std::size_t retained_cap_ = 0;
  TsInterval previous_;          // the last interval made, not yet any timeslice's core
  std::uint64_t intervals_ = 0;  // made so far
  std::uint64_t stream_offset_ = 0;
  std::int64_t start_ns_ = 0;
  bool timer_slack_set_ = false;
  bool starved_ = false;  // the last generate() found no free buffer
  // The scheduled order in turns, by builder: whether this input holds its turn, or has asked
  // for one (and when).
  struct Turn {
    bool held = false;
    bool asked = false;
    std::int64_t asked_ns = 0;
  };
  std::vector<Turn> turns_;
  std::vector<std::int64_t> builder_down_ns_;  // since when its link is down (0: up)
  bool any_builder_down_ = false;
  std::int64_t manager_down_ns_ = 0;  // since when the manager's link is down (0: up)
  std::int64_t last_slot_ = -1;
  std::uint64_t bytes_sent_total_ = 0;
  std::uint64_t contributions_sent_ = 0;  // that left, alone or in a batch
  std::uint64_t acked_total_ = 0;
  bool echo_end_ = false;  // multicast: the run's end came, the manager is to hear so
  // Without a manager, halted: what each builder was told (nothing, how many timeslices this
  // input made, or that it ended), and since when it waits for their answer, the run's end
  // (ts_end_vote.hpp), or last made one towards it.
  static constexpr std::uint8_t kMadeSaid = 1;
  static constexpr std::uint8_t kEndedSaid = 2;
  std::vector<std::uint8_t> end_said_;
  std::int64_t end_since_ns_ = 0;
  std::int64_t end_wait_ns_ = 0;  // end_wait_ms: then it ends where it stands
  [[nodiscard]] int propose_end(std::int64_t now);
  // Sends `mark` to every live builder told the one before it (nothing before a vote).
  [[nodiscard]] int say_to_builders(EndMark mark);
  void on_agreed_end(const transport::Completion& c);
  // Timeslices made so far: timeslice k is made with interval k + 1.
  [[nodiscard]] std::uint64_t made() const { return intervals_ >= 2 ? intervals_ - 1 : 0; }
  // Halted without a manager, with the run's end known and not yet reached: still making.
  [[nodiscard]] bool making_to_end() const {
    return !has_manager_ && halting() && outbox_.end() != UINT64_MAX && made() < outbox_.end();
  }
  // Nothing more to make before the input may say goodbye.
  [[nodiscard]] bool end_settled() const;
  // Every builder knows this input ended (with a manager: nothing to tell).
  [[nodiscard]] bool ended_told() const;
  // Past making: a count reached, or halted with the run's end settled. A builder that closes
  // then is no loss; before, a halted input still makes timeslices as a running one does.
  [[nodiscard]] bool done_making() const { return finished() || (halting() && end_settled()); }
  ThroughputSampler sampler_;

  // Metrics (results() reports every counter under its name).
  const runtime::MetricsRegistry* metrics_ = nullptr;
  runtime::Counter* microslices_ = nullptr;
  runtime::Counter* timeslices_sent_ = nullptr;
  runtime::Counter* timeslices_acked_ = nullptr;
  runtime::Counter* contributions_resent_ = nullptr;
  runtime::Counter* bytes_sent_ = nullptr;
  runtime::Counter* intervals_late_ = nullptr;
  runtime::Counter* slots_late_ = nullptr;
  runtime::Counter* slots_missed_ = nullptr;
  runtime::Counter* slots_empty_ = nullptr;
  runtime::Counter* slots_blocked_ = nullptr;
  runtime::Counter* turns_taken_ = nullptr;
  runtime::Counter* messages_malformed_ = nullptr;
  runtime::Counter* after_end_ = nullptr;
  runtime::Gauge* timeslices_retained_ = nullptr;

  mutable std::mutex lost_mutex_;
  std::vector<std::string> lost_builders_;
  std::map<std::string, std::vector<std::uint64_t>> sent_again_;  // lost builder -> timeslices
  mcast::ReceiverStats listener_stats_;
};

[[nodiscard]] runtime::AppType ts_input_type();

}  // namespace daqflow::apps::timeslice
