#include "daqflow/apps/builders/consumers.hpp"

#include <algorithm>

namespace daqflow::apps {

ConsumerSet::ConsumerSet(const std::vector<transport::AppIndex>& consumers, std::int64_t timeout_ns)
    : timeout_ns_(timeout_ns), alive_(consumers.size()) {
  transport::AppIndex top = 0;
  for (const auto c : consumers) top = std::max(top, c);
  position_.assign(consumers.empty() ? 0 : std::size_t{top} + 1, -1);
  consumers_.reserve(consumers.size());
  for (std::size_t i = 0; i < consumers.size(); ++i) {
    position_[consumers[i]] = static_cast<int>(i);
    consumers_.push_back(Consumer{consumers[i]});
  }
  lost_.reserve(consumers.size());
  rejoined_.reserve(consumers.size());
}

void ConsumerSet::start_watch(std::int64_t now_ns) {
  watching_ = true;
  ran_ns_ = now_ns;
  for (auto& c : consumers_) c.last_heard_ns = now_ns;
}

void ConsumerSet::ran(std::int64_t now_ns) {
  const std::int64_t away = now_ns - ran_ns_;
  ran_ns_ = now_ns;
  if (!watching_ || away <= timeout_ns_ / 4) return;
  for (auto& c : consumers_) c.last_heard_ns = std::min(now_ns, c.last_heard_ns + away);
}

void ConsumerSet::check(std::int64_t now_ns, std::vector<std::size_t>& lost_now) {
  if (!watching_) return;
  for (std::size_t p = 0; p < consumers_.size(); ++p) {
    const Consumer& c = consumers_[p];
    if (c.alive && now_ns - c.last_heard_ns > timeout_ns_ && lose(p)) lost_now.push_back(p);
  }
}

bool ConsumerSet::lose(std::size_t position) {
  Consumer& c = consumers_[position];
  if (!c.alive) return false;
  c.alive = false;
  ++c.epoch;
  --alive_;
  lost_.push_back(c.index);
  return true;
}

bool ConsumerSet::rejoin(std::size_t position, std::uint32_t epoch, std::int64_t now_ns) {
  Consumer& c = consumers_[position];
  if (c.alive || epoch != c.epoch) return false;
  c.alive = true;
  c.last_heard_ns = now_ns;
  ++alive_;
  rejoined_.push_back(c.index);
  return true;
}

}  // namespace daqflow::apps
