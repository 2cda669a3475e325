#pragma once
// WorkerQueue: what a filter-farm worker holds and decides, without sockets: the events its SFC
// gave it, in order; its epoch (a fence from the SFC starts a new one and drops what it holds);
// whether it has said it is ready (its first token); and the model's decisions, whose processing
// time is waited, not spent. The worker application feeds it what arrives with a clock reading,
// decides the head (by the model here, or by a plugin of its own), and sends the decisions whose
// time has come, in order; the unit tests drive it alone on a clock of their own.
//
// Rules:
// - An event is held only when it was sent under the worker's epoch after its token; one under
//   an older epoch (sent before a fence) or before the token is stale: dropped and counted. One
//   pushed with no answer wanted (slot kNoSlot) is counted and dropped.
// - Decisions leave in the order the events came: the head first, once its time is due.
// - A fence under a newer epoch drops every event held (the SFC has given them to others) and
//   asks for a new token.
//
// Threading: one thread (the worker's agent). Nothing allocates after construction.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "daqflow/core/buffer_pool.hpp"
#include "daqflow/core/random.hpp"
#include "daqflow/transport/transport.hpp"
#include "daqflow/wire/farm.hpp"

namespace daqflow::apps::farm {

class WorkerQueue {
 public:
  // The model of processing: an accept fraction, times drawn from a distribution (longer for
  // accepted events, typically), output of a fixed size whose first 8 bytes are the event number.
  struct Model {
    double accept_fraction = 0;
    std::uint64_t trigger_bits = 1;
    std::uint32_t output_bytes = 0;
    core::DistSpec accept_time_us;
    core::DistSpec reject_time_us;
    std::uint64_t seed = 1;
  };
  struct Held {
    wire::FarmEvent event;
    transport::Message message;
    std::int64_t done_ns = 0;  // 0: not decided yet
    wire::Decision decision;
    core::Buffer output;  // the decision's descriptor and output data, once decided
  };
  enum class Arrival : std::uint8_t {
    held,    // kept, to be decided in turn
    pushed,  // no answer wanted: dropped
    stale,   // another epoch, or before the token: dropped
    full,    // more than the capacity: the SFC's window is larger than a worker holds
  };

  WorkerQueue() = default;
  WorkerQueue(std::size_t capacity, const Model& model);

  // An event from the SFC (its message taken when held).
  [[nodiscard]] Arrival arrive(const wire::FarmEvent& e, transport::Message& message);
  // A fence under `epoch`: when newer, every event held is dropped (returns how many) and a new
  // token is due; otherwise nothing happens (returns 0).
  std::size_t fence(std::uint32_t epoch);
  [[nodiscard]] bool fenced_by(std::uint32_t epoch) const { return epoch > epoch_; }
  [[nodiscard]] std::uint32_t epoch() const { return epoch_; }
  // The token (a decision with no event) was sent: events are taken from now on.
  void token_sent() { token_sent_ = true; }
  [[nodiscard]] bool token_due() const { return !token_sent_; }

  // The oldest event held, or nullptr.
  [[nodiscard]] Held* head() { return count_ == 0 ? nullptr : &held_[head_]; }
  [[nodiscard]] const Held* head() const { return count_ == 0 ? nullptr : &held_[head_]; }
  // Decides h by the model at now into h.output (a buffer of kDecisionSize + output_bytes):
  // the decision and its output written, done_ns = now + the drawn time; returns that time, ns.
  std::int64_t decide_by_model(Held& h, core::Buffer output, std::int64_t now);
  // The head's decision was sent: it leaves.
  void pop();
  [[nodiscard]] std::size_t held() const { return count_; }
  // Drops every event held (release, fence).
  void clear();

 private:
  std::vector<Held> held_;  // ring
  std::size_t head_ = 0;
  std::size_t count_ = 0;
  Model model_;
  core::Xoshiro rng_;
  std::uint32_t epoch_ = 0;
  bool token_sent_ = false;
};

}  // namespace daqflow::apps::farm
