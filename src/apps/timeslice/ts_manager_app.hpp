#pragma once
// `ts_manager`: the time-slice builder's assigner (docs/timeslices.md), as FLESnet's manager and
// ALICE's scheduler: it gives each timeslice to the live builder with the fewest timeslices in
// flight and room in its receive buffers (from the builders' reports), tells every input, and is
// the one judge of what is written. The third user of the failure model the builders share
// (ConsumerSet): a builder silent past the heartbeat timeout or whose connection fails is lost,
// fenced (epoch + 1), and the timeslices it had not been allowed to write go to the others, the
// inputs sending them again from what they keep.
//
// Exactly once: a builder asks before it writes a timeslice (ts_commit); the manager grants it
// only to the builder the timeslice is assigned to, under the epoch it was assigned with. A
// timeslice granted to a builder that is then lost is in doubt: a frozen builder that wakes
// writes it and says so (ts_done); for one whose process died, the controller's salvage of its
// files (ts_builder's after_loss) tells the manager what is on disk (action `salvaged`): those are
// done (the manager acknowledges them to the inputs), the rest are built again elsewhere.
//
// Threading: as every application; the agent thread owns the table, the control thread's
// actions hand their work over under a mutex.

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "apps/app_support.hpp"
#include "daqflow/apps/builders/consumers.hpp"
#include "daqflow/apps/builders/control_log.hpp"
#include "daqflow/runtime/settings.hpp"
#include "daqflow/wire/timeslice.hpp"
#include "ts_assign_cast.hpp"
#include "ts_assigner.hpp"

namespace daqflow::apps::timeslice {

struct TsManagerSettings {
  static const runtime::SettingsSpec<TsManagerSettings>& spec();  // ts_manager.settings.yaml

  std::vector<std::string> builders;
  std::vector<std::string> inputs;
  std::uint32_t window = 0;
  std::uint32_t builder_window = 0;
  std::int64_t heartbeat_timeout_ms = 0;
  std::int64_t redial_ms = 0;
  mcast::MasterGroupSettings multicast;  // group empty: assignments over the transport
};

class TsManager final : public runtime::ApplicationWith<TsManager, TsManagerSettings> {
 public:
  Result<void> setup(runtime::AppContext& ctx, const TsManagerSettings& s) override;
  void release() override;

  void wait_for_work(std::chrono::microseconds timeout) override;
  [[nodiscard]] nlohmann::json results() const override;
  [[nodiscard]] Result<nlohmann::json> action(std::string_view name,
                                              const nlohmann::json& args) override;

 private:
  // Configure, in order: the peers; the assigner; the endpoint, pool and assignment log; the
  // metrics; the run's state; the handlers.
  [[nodiscard]] Result<void> take_peers(runtime::AppContext& ctx, const TsManagerSettings& s);
  [[nodiscard]] Result<void> open_endpoint(runtime::AppContext& ctx, std::uint32_t window);
  void add_metrics(runtime::MetricsRegistry& m);
  void reset_run(std::uint32_t window);
  void add_handlers();

  // Salvage results handed over by the control thread.
  struct Salvaged {
    std::size_t builder = 0;
    std::vector<std::uint64_t> written;
  };

  // The builders' doubt and lost flags for the control thread, in one hand-over; `lost`: a
  // builder declared lost with it (its flag and its timeslices in doubt are seen together).
  void publish_doubt(std::optional<std::size_t> lost = std::nullopt);
  // To every input (by multicast where configured); a full log fails the run.
  void push_assign(const wire::TsAssign& a);
  [[nodiscard]] bool assigns_have_room() const {
    return cast_ ? cast_->has_room() : assigns_.has_room();
  }
  // Every input not gone has echoed the run's end (multicast: its only word to the manager,
  // saying it got every assignment up to the end).
  [[nodiscard]] bool ends_heard() const;
  void on_end_heard(const transport::Completion& c);
  // The assignments of again_ to every input.
  void tell_again();
  int flush_assignments();
  // The position of a builder in builder_ids_ (nullopt: not one of this manager's).
  [[nodiscard]] std::optional<std::size_t> builder_of(transport::AppIndex peer) const;
  // A message from a builder to handle(position, completion, now); from anyone else rejected.
  template <typename Handle>
  [[nodiscard]] runtime::DataPath::OnMessage from_builder(Handle handle);
  [[nodiscard]] int work(std::int64_t now);
  void on_report(std::size_t b, const transport::Completion& c, std::int64_t now);
  void on_commit(std::size_t b, const transport::Completion& c);
  void on_done(std::size_t b, const transport::Completion& c);
  // A builder's connection failed: lost now, and on_lost().
  void lose(std::size_t b, const std::string& why);
  // After the assigner lost it: tell the inputs where its timeslices went, fence it.
  void on_lost(std::size_t b, const std::string& why, const TsAssigner::Loss& loss);
  void fence(std::size_t b);
  void apply_salvage();
  // An input's link failed (not closed in order): dialed again for redial_ms (true), or the input
  // is left to its fate (false). Once it is back, every open assignment and the run's end go to
  // it again (over the transport; with multicast, the channel's retry covers them).
  [[nodiscard]] bool input_link_failed(std::size_t input, std::string_view why);
  void check_input_links(std::int64_t now);
  void push_resyncs();
  // The acknowledgements of salvaged timeslices into the inputs' log, as far as it has room.
  void push_salvage_acks();
  // A commit answer or a fence to builder b (a full log fails the manager).
  void reply(std::size_t b, wire::MessageType type, std::uint64_t tag,
             std::span<const std::byte> bytes);

  // Configuration.
  std::vector<transport::AppIndex> builder_ids_;
  std::vector<transport::AppIndex> inputs_;
  std::int64_t heartbeat_timeout_ns_ = 0;
  std::int64_t redial_ns_ = 0;
  std::vector<std::string> ids_;

  // Agent thread.
  transport::Endpoint* endpoint_ = nullptr;
  core::Clock* clock_ = nullptr;
  TsAssigner assigner_;
  std::vector<TsAssigner::Assignment> again_;  // scratch: what a loss or a salvage gave again
  ControlLog assigns_;                         // to the inputs, in order (multicast: acks only)
  // Timeslices the inputs may drop: found on a lost builder's disk, or written by it last.
  std::vector<std::uint64_t> acks_due_;
  // By builder, a ring of the last `window` timeslices it reported written: a builder lost may
  // not have sent their acknowledgements to the inputs (in turns they wait for the input's), so
  // the manager sends them in its stead.
  std::vector<std::vector<std::uint64_t>> recent_done_;
  std::vector<std::uint64_t> done_by_builder_;
  std::vector<std::uint64_t> salvage_acked_;  // those pushed to the inputs so far in this run
  struct InputLink {
    std::int64_t down_ns = 0;                   // since when its link is down (0: up)
    std::vector<TsAssigner::Assignment> again;  // to tell it again, from `at`
    std::size_t at = 0;
    // The salvage acknowledgements pushed before the link came back, salvage_acked_[0, acks),
    // to tell it again from acks_at (those on the old link may be gone with it).
    std::size_t acks = 0;
    std::size_t acks_at = 0;
    bool end = false;  // and then the run's end
  };
  std::vector<InputLink> input_links_;
  bool any_input_down_ = false;
  ControlLog replies_;                     // commit answers and fences to the builders
  std::optional<AssignCaster> cast_;       // or by multicast
  std::vector<bool> end_heard_;            // multicast: per input, its echo of the end
  std::vector<transport::AppIndex> gone_;  // scratch
  std::vector<std::size_t> lost_now_;
  bool watching_ = false;
  bool end_sent_ = false;  // the inputs know the run's last timeslice
  std::int64_t next_check_ns_ = 0;

  // Metrics (results() reports every counter under its name).
  const runtime::MetricsRegistry* metrics_ = nullptr;
  runtime::Counter* assigned_ = nullptr;
  runtime::Counter* reassigned_ = nullptr;
  runtime::Counter* committed_ = nullptr;
  runtime::Counter* denied_ = nullptr;
  runtime::Counter* granted_again_ = nullptr;
  runtime::Counter* done_ = nullptr;
  runtime::Counter* salvaged_written_ = nullptr;
  runtime::Counter* messages_malformed_ = nullptr;
  runtime::Gauge* in_flight_ = nullptr;
  runtime::Gauge* builders_alive_ = nullptr;

  mutable std::mutex mutex_;  // guards what follows: the control thread's view and hand-over
  std::vector<std::string> lost_builders_;
  std::vector<std::string> rejoined_builders_;
  std::vector<Salvaged> salvaged_;
  std::vector<std::vector<std::uint64_t>> in_doubt_;  // per builder: committed when it was lost
  std::vector<bool> lost_flags_;                      // per builder, for the control thread
  mcast::SenderStats cast_stats_;
};

[[nodiscard]] runtime::AppType ts_manager_type();

}  // namespace daqflow::apps::timeslice
