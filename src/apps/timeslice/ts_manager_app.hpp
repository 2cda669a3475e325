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
#include "daqflow/runtime/application.hpp"
#include "daqflow/wire/timeslice.hpp"

namespace daqflow::apps::timeslice {

class TsManager final : public runtime::Application {
 public:
  Result<void> configure(runtime::AppContext& ctx) override;
  void release() override;

  void wait_for_work(std::chrono::microseconds timeout) override;
  [[nodiscard]] nlohmann::json results() const override;
  [[nodiscard]] Result<nlohmann::json> action(std::string_view name,
                                              const nlohmann::json& args) override;

 private:
  // aside: the ring slot's entry moved to aside_ (it left the window while in doubt).
  enum class State : std::uint8_t { assigned, committed, done, aside };
  struct Entry {
    std::uint64_t index = 0;
    std::size_t builder = 0;  // position
    std::uint32_t epoch = 0;
    State state = State::assigned;
  };
  struct Builder {
    std::uint32_t outstanding = 0;  // assigned or committed, not done
    std::uint32_t free_buffers = 0;
    bool reported = false;
  };
  // Salvage results handed over by the control thread.
  struct Salvaged {
    std::size_t builder = 0;
    std::vector<std::uint64_t> written;
  };

  [[nodiscard]] Entry* entry(std::uint64_t index);
  [[nodiscard]] int pick_builder() const;
  // pick_builder(), or when none has room the first live one (its queue waits); -1: none live.
  [[nodiscard]] int reassign_target() const;
  void advance();
  void publish_doubt();
  void assign(Entry& e, std::size_t builder);
  // To every input; a full log fails the run.
  void push_assign(const wire::TsAssign& a);
  int flush_assignments();
  // The position of a builder in builders_ (nullopt: not one of this manager's).
  [[nodiscard]] std::optional<std::size_t> builder_of(transport::AppIndex peer) const;
  // A message from a builder to handle(position, completion, now); from anyone else rejected.
  template <typename Handle>
  [[nodiscard]] runtime::DataPath::OnMessage from_builder(Handle handle);
  [[nodiscard]] int work(std::int64_t now);
  void on_report(std::size_t b, const transport::Completion& c, std::int64_t now);
  void on_commit(std::size_t b, const transport::Completion& c);
  void on_done(std::size_t b, const transport::Completion& c);
  void mark_done(Entry& e);
  // A builder's connection failed: lost now (ConsumerSet) and on_lost().
  void lose(std::size_t b, const std::string& why);
  // Its timeslices not yet granted go to others, granted ones are in doubt, it is fenced.
  void on_lost(std::size_t b, const std::string& why);
  void fence(std::size_t b);
  void apply_salvage();
  bool send_small(transport::AppIndex peer, wire::MessageType type, std::uint64_t tag,
                  std::span<const std::byte> bytes);

  // Configuration.
  std::vector<transport::AppIndex> builder_ids_;
  std::vector<transport::AppIndex> inputs_;
  std::uint32_t window_ = 0;
  std::uint32_t builder_window_ = 0;
  std::int64_t heartbeat_timeout_ns_ = 0;
  std::uint32_t min_free_ = 0;
  std::uint64_t limit_ =
      UINT64_MAX;  // the inputs make this many timeslices (their `count`)  // receive buffers a
                   // timeslice needs at a builder (one per input)
  std::vector<std::string> ids_;

  // Agent thread.
  transport::Endpoint* endpoint_ = nullptr;
  core::Clock* clock_ = nullptr;
  core::BufferPool* control_pool_ = nullptr;  // the data path's
  ConsumerSet set_;
  std::vector<Builder> builders_;
  std::vector<Entry> entries_;  // ring: [oldest_, next_) by index
  std::uint64_t oldest_ = 0;
  std::uint64_t next_ = 0;
  // Timeslices a lost builder was allowed to write (in doubt), and those given again after its
  // salvage: out of the window, so that they do not hold up the others.
  std::vector<Entry> aside_;
  ControlLog assigns_;                     // to the inputs, in order
  std::vector<transport::AppIndex> gone_;  // scratch
  std::vector<std::size_t> lost_now_;
  bool watching_ = false;
  bool end_sent_ = false;  // the inputs know the run's last timeslice
  std::int64_t next_check_ns_ = 0;

  // Metrics.
  runtime::Counter* assigned_ = nullptr;
  runtime::Counter* reassigned_ = nullptr;
  runtime::Counter* committed_ = nullptr;
  runtime::Counter* denied_ = nullptr;
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
};

[[nodiscard]] runtime::AppType ts_manager_type();

}  // namespace daqflow::apps::timeslice
