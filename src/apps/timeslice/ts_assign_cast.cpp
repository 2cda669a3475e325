#include "ts_assign_cast.hpp"

#include <algorithm>
#include <array>

namespace daqflow::apps::timeslice {

namespace {

// A missing datagram is asked for every 5 ms, 200 times at most: a second of a lossy network.
constexpr std::int64_t kNackIntervalNs = 5'000'000;
constexpr std::uint32_t kMaxNacks = 200;

}  // namespace

Result<AssignCaster> AssignCaster::open(const mcast::Group& group, std::size_t history) {
  auto sender = mcast::Sender::open(group, history);
  if (!sender) return sender.error();
  return AssignCaster(std::move(*sender));
}

void AssignCaster::push(const wire::TsAssign& a) {
  std::array<std::byte, wire::kTsAssignSize> bytes{};
  wire::encode(a, bytes);
  queue_.insert(queue_.end(), bytes.begin(), bytes.end());
  ++queued_;
}

int AssignCaster::pump(std::int64_t now_ns) {
  int work = sender_.pump(now_ns);
  while (queued_ > 0) {
    const std::size_t records = std::min(queued_, kPerDatagram);
    const std::span<const std::byte> datagram(queue_.data() + sent_, records * wire::kTsAssignSize);
    if (!sender_.send(datagram)) break;  // the socket is full: the rest next turn
    sent_ += datagram.size();
    queued_ -= records;
    ++work;
  }
  if (queued_ == 0) {
    queue_.clear();
    sent_ = 0;
  }
  return work;
}

Result<AssignListener> AssignListener::open(const mcast::Group& group, double drop_fraction,
                                            std::uint64_t seed) {
  auto receiver = mcast::Receiver::open(group, drop_fraction, seed, kNackIntervalNs, kMaxNacks);
  if (!receiver) return receiver.error();
  return AssignListener(std::move(*receiver));
}

}  // namespace daqflow::apps::timeslice
