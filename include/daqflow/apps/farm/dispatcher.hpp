#pragma once
// The SFC's bookkeeping (docs/farm.md): which event goes to which worker, what each worker holds,
// and what becomes of a lost worker's events. It is the filter farm's work table on the shared
// failure model (ConsumerSet), and keeps at every moment
//
//   events_received = events_decided + events_outstanding + events_queued.
//
// Pure state: the SFC application feeds it events, decisions and a clock reading and sends what
// it decides, so it runs in tests with no sockets. Event data stays with the application, in the
// slot the dispatcher names (a slot is an event the SFC retains until it is decided).
//
// A worker takes part once it said it is ready (a token with no decision, under its epoch): it
// then holds `window` tokens. Policies:
//   round_robin   workers in a fixed turn; the SFC waits for the worker whose turn it is when
//                 it already holds `window` events.
//   tokens        a FIFO of tokens: each event goes to the sender of the oldest token; every
//                 decision returns the token.
//   least_loaded  the ready worker with the fewest events outstanding; a worker that reaches
//                 busy_threshold is skipped until it is down to free_threshold (DUNE's DFO).
//   push          no tokens and no answers: workers in turn, as fast as the transport takes them
//                 (a reference for benchmarks; nothing is retained, so a lost worker's events
//                 are lost).
// Events wait in a FIFO of `queue` entries when no worker can take them; admit() is refused
// when it is full, which back-pressures the SFC's input.
//
// Loss: a worker whose connection fails or that is silent for the heartbeat timeout is lost (its
// epoch goes up); its outstanding events go back to the front of the queue, oldest first, and
// are dispatched again; a decision sent under an older epoch, or naming an event the worker no
// longer holds, is late: dropped and counted. It rejoins by sending a token under its new epoch.
//
// Threading: one thread (the SFC's agent). Nothing allocates after create().

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "daqflow/apps/builders/consumers.hpp"
#include "daqflow/core/result.hpp"
#include "daqflow/transport/address.hpp"
#include "daqflow/wire/farm.hpp"

namespace daqflow::apps::farm {

enum class Policy : std::uint8_t { round_robin, tokens, least_loaded, push };
[[nodiscard]] std::string_view to_string(Policy p);
[[nodiscard]] Result<Policy> parse_policy(std::string_view name);

inline constexpr std::uint32_t kNoSlot = 0xffffffff;  // push: the event wants no answer

struct DispatcherSettings {
  std::vector<transport::AppIndex> workers;
  Policy policy = Policy::tokens;
  std::uint32_t window = 2;          // tokens per worker: events it may hold at once
  std::uint32_t busy_threshold = 2;  // least_loaded, at most window
  std::uint32_t free_threshold = 1;  // least_loaded, below busy_threshold
  std::uint32_t queue = 64;          // events waiting for a worker
  std::int64_t heartbeat_timeout_ns = 2'000'000'000;
};

struct Dispatch {
  std::uint32_t slot = kNoSlot;
  std::size_t worker = 0;  // position
  transport::AppIndex peer = 0;
  std::uint64_t event = 0;
  std::uint32_t epoch = 0;
  bool again = false;  // dispatched before, to a worker since lost
};

enum class DecisionOutcome : std::uint8_t {
  decided,  // the answer for an event this worker holds: counted, the slot is free
  ready,    // a token with no decision: the worker (re)joined and holds window tokens
  late,     // from an older epoch, or for an event the worker does not hold: dropped
  unknown,  // the sender is not a worker
};

class Dispatcher {
 public:
  [[nodiscard]] static Result<Dispatcher> create(DispatcherSettings settings);

  // Starts the heartbeat watch (Enable).
  void start_watch(std::int64_t now_ns) { workers_.start_watch(now_ns); }
  // Each time the SFC runs: its own absence counts against no worker (ConsumerSet::ran()).
  void ran(std::int64_t now_ns) { workers_.ran(now_ns); }
  // A message from peer: it is alive (a lost worker stays lost until it rejoins).
  void heard_from(transport::AppIndex peer, std::int64_t now_ns);

  // Room for one more event in the queue.
  [[nodiscard]] bool can_admit() const { return queued_size_ < settings_.queue && free_count_ > 0; }
  // Queues event `number` and returns its slot (can_admit() must hold).
  std::uint32_t admit(std::uint64_t number);
  // The next event and the worker to send it to under the policy, if any; the event is then
  // outstanding at that worker. A dispatch the application could not send goes back (retract).
  [[nodiscard]] bool next(Dispatch& out);
  void retract(const Dispatch& d);
  // push: the event was sent; it is done.
  void pushed(const Dispatch& d);

  // A decision (or bare token) from peer. On `decided`, slot_out is the event's slot, now free
  // for admit() once the application has let go of its data.
  [[nodiscard]] DecisionOutcome decide(transport::AppIndex peer, const wire::Decision& d,
                                       std::int64_t now_ns, std::uint32_t& slot_out);

  // Loses a worker (connection failed); false when it is unknown or lost already.
  bool lose(transport::AppIndex peer);
  // Workers silent past the timeout are lost; their indexes are appended to lost_now.
  void check(std::int64_t now_ns, std::vector<transport::AppIndex>& lost_now);

  [[nodiscard]] const ConsumerSet& workers() const { return workers_; }
  [[nodiscard]] std::uint32_t epoch_of(transport::AppIndex peer) const;
  [[nodiscard]] std::uint64_t event_of(std::uint32_t slot) const { return slots_[slot].event; }

  [[nodiscard]] std::uint64_t received() const { return received_; }
  [[nodiscard]] std::uint64_t decided() const { return decided_; }
  [[nodiscard]] std::uint64_t accepted() const { return accepted_; }
  [[nodiscard]] std::uint64_t pushed_count() const { return pushed_; }
  [[nodiscard]] std::uint64_t outstanding() const { return outstanding_; }
  [[nodiscard]] std::uint64_t queued() const { return queued_size_; }
  [[nodiscard]] std::uint64_t redispatched() const { return redispatched_; }
  [[nodiscard]] std::uint64_t late() const { return late_; }
  [[nodiscard]] std::uint64_t waits_without_worker() const { return waits_; }
  struct WorkerCounts {
    std::uint64_t dispatched = 0, accepted = 0, rejected = 0, late = 0;
    std::uint32_t outstanding = 0;
    bool ready = false;
  };
  [[nodiscard]] const WorkerCounts& counts(std::size_t position) const { return counts_[position]; }
  // Empty when the accounting holds; otherwise what is wrong.
  [[nodiscard]] std::string check_invariant() const;

 private:
  struct Slot {
    std::uint64_t event = 0;
    std::uint32_t worker = 0;  // position, while outstanding
    std::uint32_t epoch = 0;
    enum class State : std::uint8_t { free, queued, outstanding } state = State::free;
    bool again = false;
  };

  explicit Dispatcher(DispatcherSettings settings);
  [[nodiscard]] bool pick(std::size_t& worker);
  [[nodiscard]] bool can_take(std::size_t worker) const;
  void queue_front(std::uint32_t slot);
  void give_tokens(std::size_t worker);
  // After the consumer set lost this worker: its tokens and events come back.
  void release_of(std::size_t worker);

  DispatcherSettings settings_;
  ConsumerSet workers_;
  std::vector<WorkerCounts> counts_;
  std::vector<bool> busy_;  // least_loaded hysteresis
  std::vector<Slot> slots_;
  std::vector<std::uint32_t> free_;  // stack of free slots
  std::size_t free_count_ = 0;
  std::vector<std::uint32_t> queued_;  // ring of slots, FIFO (re-dispatched ones at the front)
  std::size_t queued_head_ = 0;
  std::size_t queued_size_ = 0;
  std::vector<std::uint32_t> tokens_;  // ring of worker positions
  std::size_t tokens_head_ = 0;
  std::size_t tokens_size_ = 0;
  std::size_t turn_ = 0;  // round_robin, push
  std::vector<std::size_t> lost_scratch_;

  std::uint64_t received_ = 0;
  std::uint64_t decided_ = 0;
  std::uint64_t accepted_ = 0;
  std::uint64_t pushed_ = 0;
  std::uint64_t outstanding_ = 0;
  std::uint64_t redispatched_ = 0;
  std::uint64_t late_ = 0;
  std::uint64_t waits_ = 0;
};

}  // namespace daqflow::apps::farm
