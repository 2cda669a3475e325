#include "daqflow/runtime/data_path.hpp"

#include <algorithm>

#include "daqflow/runtime/metrics.hpp"

namespace daqflow::runtime {

DataPath::DataPath() : batch_(kBatch) {}

DataPath::~DataPath() {
  for (auto& c : batch_) c.message.clear();
  retire_pools();
}

void DataPath::retire_pools() {
  for (auto& pool : pools_) {
    const std::string owner = pool->name();
    core::retire_pool(pool, core::BusyPool::leak, owner);
  }
  pools_.clear();
}

Result<core::BufferPool*> DataPath::send_pool(const std::string& name, std::size_t buffer_size,
                                              std::size_t count) {
  if (endpoint_ == nullptr)
    return Error(ErrorCode::internal, "send pool '" + name + "' asked for before the endpoint");
  auto pool = endpoint_->make_send_pool(name, buffer_size, count);
  if (!pool) return pool.error().context("send pool '" + name + "'");
  pools_.push_back(std::move(*pool));
  return pools_.back().get();
}

transport::SendStatus send_copy(transport::Endpoint& endpoint, core::BufferPool& pool,
                                transport::AppIndex peer, wire::MessageType type, std::uint64_t tag,
                                std::span<const std::byte> bytes) {
  core::Buffer b = pool.acquire();
  if (!b) return transport::SendStatus::back_pressure;
  std::copy(bytes.begin(), bytes.end(), b.data());
  transport::Message m;
  m.type = type;
  m.tag = tag;
  m.add(std::move(b), 0, static_cast<std::uint32_t>(bytes.size()));
  const transport::SendStatus s = endpoint.post_send(peer, m);
  m.clear();
  return s;
}

transport::SendStatus DataPath::send_copy(core::BufferPool& pool, AppIndex peer,
                                          wire::MessageType type, std::uint64_t tag,
                                          std::span<const std::byte> bytes) {
  return runtime::send_copy(*endpoint_, pool, peer, type, tag, bytes);
}

void DataPath::attach(core::Clock& clock, MetricsRegistry& metrics) {
  clock_ = &clock;
  const bool handles = std::any_of(handlers_.begin(), handlers_.end(),
                                   [](const OnMessage& h) { return static_cast<bool>(h); });
  if (rejected_ == nullptr && handles) {
    rejected_ = &metrics.counter("messages_rejected",
                                 "messages of an unexpected type or refused by their handler");
  }
  drained_.store(false, std::memory_order_release);
  attached_ = true;
}

void DataPath::on(wire::MessageType type, OnMessage handler) {
  handlers_[static_cast<std::uint8_t>(type)] = std::move(handler);
}

void DataPath::intercept(Interceptor interceptor) {
  intercept_ = std::move(interceptor);
}

void DataPath::on_sent(OnSent handler) {
  on_sent_ = std::move(handler);
}

void DataPath::on_peer_gone(OnPeerGone handler) {
  on_peer_gone_ = std::move(handler);
}

void DataPath::every(std::chrono::nanoseconds period, OnTimer handler) {
  timers_.push_back(Timer{std::max<std::int64_t>(1, period.count()), 0, std::move(handler)});
}

void DataPath::at(std::function<std::int64_t()> due, OnTimer handler) {
  deadlines_.push_back(Deadline{std::move(due), std::move(handler)});
}

void DataPath::on_work(OnWork handler) {
  on_work_ = std::move(handler);
}

void DataPath::drained_when(Predicate predicate, Describe describe) {
  drained_when_ = std::move(predicate);
  describe_in_flight_ = std::move(describe);
}

void DataPath::ask_in_flight() {
  in_flight_asked_.fetch_add(1, std::memory_order_release);
}

std::optional<std::string> DataPath::in_flight() const {
  const std::uint32_t asked = in_flight_asked_.load(std::memory_order_acquire);
  const std::lock_guard lock(in_flight_mutex_);
  if (asked == 0 || in_flight_answered_ != asked) return std::nullopt;
  return in_flight_text_;
}

void DataPath::clear() {
  for (auto& h : handlers_) h = nullptr;
  intercept_ = nullptr;
  on_sent_ = nullptr;
  on_peer_gone_ = nullptr;
  on_work_ = nullptr;
  drained_when_ = nullptr;
  describe_in_flight_ = nullptr;
  timers_.clear();
  deadlines_.clear();
  for (auto& c : batch_) c.message.clear();
  endpoint_ = nullptr;
  rejected_ = nullptr;
  caught_up_ = true;
  attached_ = false;
}

void DataPath::dispatch(Completion& c, std::int64_t now) {
  if (intercept_ && intercept_(c)) {
    c.message.clear();
    return;
  }
  switch (c.kind) {
    case Completion::Kind::recv: {
      const OnMessage& handler = handlers_[static_cast<std::uint8_t>(c.message.type)];
      rejected_now_ = !handler;
      if (handler) handler(c, now);
      if (rejected_now_ && rejected_ != nullptr) rejected_->add_single_writer();
      break;
    }
    case Completion::Kind::send_done:
      if (on_sent_) on_sent_(c);
      break;
    case Completion::Kind::peer_closed:
      if (on_peer_gone_) on_peer_gone_(c.peer, {}, false);
      break;
    case Completion::Kind::error:
      if (on_peer_gone_) {
        on_peer_gone_(c.peer, c.reason.empty() ? std::string_view("connection failed") : c.reason,
                      c.rejected);
      }
      break;
  }
  // Dropping the message returns its buffers to the sender's or the transport's pool.
  c.message.clear();
}

int DataPath::round() {
  if (clock_ == nullptr) return 0;  // not attached: nothing registered
  const std::int64_t now = clock_->now_ns();
  int work = 0;
  if (endpoint_ != nullptr) {
    for (int poll = 0; poll < kPollRounds; ++poll) {
      const std::size_t n = endpoint_->poll(batch_);
      for (std::size_t i = 0; i < n; ++i) dispatch(batch_[i], now);
      work += static_cast<int>(n);
      caught_up_ = n < batch_.size();
      if (caught_up_) break;
    }
  }
  for (Timer& t : timers_) {
    if (t.due_ns == 0) {
      t.due_ns = now + t.period_ns;
    } else if (now >= t.due_ns) {
      t.run(now);
      t.due_ns = std::max(t.due_ns + t.period_ns, now);
    }
  }
  for (Deadline& d : deadlines_) {
    const std::int64_t due = d.due();
    if (d.run && due != 0 && now >= due) d.run(now);
  }
  if (on_work_) work += on_work_(now);
  return work;
}

void DataPath::settle(bool halting) {
  if (halting && drained_when_ && !drained_.load(std::memory_order_relaxed) && drained_when_()) {
    drained_.store(true, std::memory_order_release);
  }
  const std::uint32_t asked = in_flight_asked_.load(std::memory_order_acquire);
  if (asked == in_flight_answered_) return;  // only the agent changes it: read without the lock
  std::string text;
  if (drained_.load(std::memory_order_relaxed)) {
    text = "drained";
  } else if (describe_in_flight_) {
    text = describe_in_flight_();
  }
  const std::lock_guard lock(in_flight_mutex_);
  in_flight_text_ = std::move(text);
  in_flight_answered_ = asked;
}

void DataPath::flush() {
  if (endpoint_ != nullptr) (void)endpoint_->poll(std::span<Completion>(batch_.data(), 0));
}

std::chrono::microseconds DataPath::sleep_cap(std::chrono::microseconds cap) const {
  if (clock_ == nullptr) return cap;
  std::int64_t due = 0;  // the earliest, 0: none
  const auto earliest = [&due](std::int64_t t) {
    if (t != 0 && (due == 0 || t < due)) due = t;
  };
  for (const Timer& t : timers_) earliest(t.due_ns);
  for (const Deadline& d : deadlines_) earliest(d.due());
  if (due == 0) return cap;
  const std::int64_t left_ns = due - clock_->now_ns();
  if (left_ns <= 0) return std::chrono::microseconds(0);
  return std::min(cap, std::chrono::microseconds(left_ns / 1000 + 1));
}

}  // namespace daqflow::runtime
