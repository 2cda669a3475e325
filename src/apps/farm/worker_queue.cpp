#include "worker_queue.hpp"

#include <algorithm>

#include "daqflow/apps/farm/dispatcher.hpp"
#include "daqflow/wire/endian.hpp"

namespace daqflow::apps::farm {

WorkerQueue::WorkerQueue(std::size_t capacity, const Model& model)
    : held_(capacity), model_(model), rng_(model.seed) {}

WorkerQueue::Arrival WorkerQueue::arrive(const wire::FarmEvent& e, transport::Message& message) {
  if (e.slot == kNoSlot) return Arrival::pushed;
  if (e.epoch != epoch_ || !token_sent_) return Arrival::stale;
  if (count_ == held_.size()) return Arrival::full;
  Held& h = held_[(head_ + count_++) % held_.size()];
  h.event = e;
  h.message = std::move(message);
  h.done_ns = 0;
  return Arrival::held;
}

std::size_t WorkerQueue::fence(std::uint32_t epoch) {
  if (epoch <= epoch_) return 0;
  const std::size_t dropped = count_;
  clear();
  epoch_ = epoch;
  token_sent_ = false;
  return dropped;
}

std::int64_t WorkerQueue::decide_by_model(Held& h, core::Buffer output, std::int64_t now) {
  h.output = std::move(output);
  wire::Decision& d = h.decision;
  d = wire::Decision{};
  d.event = h.event.event;
  d.slot = h.event.slot;
  d.epoch = h.event.epoch;
  const bool accept = rng_.uniform() <= model_.accept_fraction;
  const double us =
      std::max(0.0, core::sample(accept ? model_.accept_time_us : model_.reject_time_us, rng_));
  d.verdict = accept ? wire::Verdict::accept : wire::Verdict::reject;
  d.trigger_bits = accept ? model_.trigger_bits : 0;
  d.output_size = accept ? model_.output_bytes : 0;
  if (accept && model_.output_bytes >= 8) {
    wire::store_le64(h.output.data() + wire::kDecisionSize, h.event.event);
  }
  wire::encode(d, std::span<std::byte, wire::kDecisionSize>(h.output.data(), wire::kDecisionSize));
  const auto ns = static_cast<std::int64_t>(us * 1000.0);
  h.done_ns = now + std::max<std::int64_t>(ns, 1);
  return ns;
}

void WorkerQueue::pop() {
  Held& h = held_[head_];
  h.output.reset();
  h.message.clear();
  h.done_ns = 0;
  head_ = (head_ + 1) % held_.size();
  --count_;
}

void WorkerQueue::clear() {
  for (Held& h : held_) {
    h.message.clear();
    h.output.reset();
    h.done_ns = 0;
  }
  head_ = count_ = 0;
}

}  // namespace daqflow::apps::farm
