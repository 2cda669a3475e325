#include "mcast_apps.hpp"

#include <poll.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "daqflow/core/clock.hpp"
#include "daqflow/wire/endian.hpp"

namespace daqflow::apps::mcast {

namespace {

// How long a halted receiver waits for the repairs of what it still misses.
constexpr std::int64_t kReceiverLingerNs = 2'000'000'000;

void wait_readable(int fd, std::chrono::microseconds timeout) {
  pollfd pfd{fd, POLLIN, 0};
  (void)::poll(&pfd, 1, static_cast<int>(std::max<std::int64_t>(0, timeout.count() / 1000)));
}

}  // namespace

Group GroupSettings::to_group() const {
  Group g;
  g.address = group;
  g.port = static_cast<std::uint16_t>(port);  // the spec's range
  g.interface = interface;
  return g;
}

Result<void> McastSender::setup(runtime::AppContext& ctx, const McastSenderSettings& s) {
  rate_hz_ = s.rate_hz;
  size_ = s.size;
  count_ = s.count;
  linger_ns_ = s.linger_ms * 1'000'000;
  if (size_ < 8 || size_ > kMaxPayload) {
    return runtime::param_error("size", "must be between 8 and " + std::to_string(kMaxPayload));
  }
  auto sender = Sender::open(s.group.to_group(), s.history);
  if (!sender) return sender.error();
  sender_.emplace(std::move(*sender));
  payload_.assign(size_, std::byte{0});
  tokens_ = 0;
  refilled_ns_ = 0;
  halt_ns_.store(0);
  clock_ = &ctx.clock();
  data_path().on_work([this](std::int64_t now) { return work(now); });
  // Halting: it keeps answering NACKs (and sending heartbeats) for linger_ms, so that the
  // receivers get the repairs of the last messages.
  data_path().drained_when([this] {
    const std::int64_t halt = halt_ns_.load();
    return halt != 0 && clock_->now_ns() - halt >= linger_ns_;
  });
  return ok();
}

void McastSender::begin_halt() {
  halt_ns_.store(clock_->now_ns());
}

void McastSender::release() {
  sender_.reset();
}

int McastSender::work(std::int64_t now) {
  int work = sender_->pump(now);
  if (producing() && (count_ == 0 || sender_->next_sequence() < count_)) {
    if (refilled_ns_ == 0) refilled_ns_ = now;
    tokens_ = std::min(std::max(1.0, rate_hz_ * 0.01),
                       tokens_ + rate_hz_ * static_cast<double>(now - refilled_ns_) * 1e-9);
    refilled_ns_ = now;
    while (tokens_ >= 1 && (count_ == 0 || sender_->next_sequence() < count_)) {
      // Contents a receiver can check: the sequence, then bytes derived from it.
      const std::uint64_t seq = sender_->next_sequence();
      wire::store_le64(payload_.data(), seq);
      for (std::size_t i = 8; i < payload_.size(); ++i) {
        payload_[i] = static_cast<std::byte>((seq * 31 + i) & 0xff);
      }
      if (!sender_->send(payload_)) break;
      tokens_ -= 1;
      ++work;
    }
    if (count_ > 0 && sender_->next_sequence() >= count_ && !finished()) set_finished();
  }
  {
    const std::lock_guard lock(mutex_);
    stats_ = sender_->stats();
  }
  return work;
}

void McastSender::wait_for_work(std::chrono::microseconds timeout) {
  if (!sender_) return;
  const auto cap = std::chrono::microseconds(
      producing() && rate_hz_ > 0
          ? std::clamp<std::int64_t>(static_cast<std::int64_t>(2e5 / rate_hz_), 0, 1000)
          : 1000);
  if (cap.count() == 0) return;
  wait_readable(sender_->fd(), std::min(timeout, cap));
}

nlohmann::json McastSender::results() const {
  const std::lock_guard lock(mutex_);
  return stats_;
}

Result<void> McastReceiver::setup(runtime::AppContext& ctx, const McastReceiverSettings& s) {
  auto receiver = Receiver::open(s.group.to_group(), s.drop_fraction, s.seed,
                                 static_cast<std::int64_t>(s.nack_ms * 1e6), s.max_nacks);
  if (!receiver) return receiver.error();
  receiver_.emplace(std::move(*receiver));
  content_errors_ = 0;
  next_seq_ = 0;
  halting_since_ns_ = 0;
  clock_ = &ctx.clock();
  data_path().on_work([this](std::int64_t now) { return work(now); });
  // Done once nothing is missing any more, or the repairs did not come in time.
  data_path().drained_when([this] {
    return receiver_->missing() == 0 ||
           (halting_since_ns_ != 0 && clock_->now_ns() - halting_since_ns_ >= kReceiverLingerNs);
  });
  return ok();
}

void McastReceiver::release() {
  receiver_.reset();
}

int McastReceiver::work(std::int64_t now) {
  const int work = receiver_->pump(now, [&](std::span<const std::byte> m) {
    // In order (a message given up is skipped) and with the contents the sender made.
    const std::uint64_t seq = m.size() >= 8 ? wire::load_le64(m.data()) : 0;
    bool good = m.size() >= 8 && seq >= next_seq_;
    next_seq_ = seq + 1;
    for (std::size_t i = 8; good && i < m.size(); ++i) {
      good = m[i] == static_cast<std::byte>((seq * 31 + i) & 0xff);
    }
    if (!good) ++content_errors_;
  });
  {
    const std::lock_guard lock(mutex_);
    stats_ = receiver_->stats();
    content_errors_copy_ = content_errors_;
  }
  if (halting() && halting_since_ns_ == 0) halting_since_ns_ = now;
  return work;
}

void McastReceiver::wait_for_work(std::chrono::microseconds timeout) {
  if (!receiver_) return;
  wait_readable(receiver_->fd(), std::min(timeout, std::chrono::microseconds(1000)));
}

nlohmann::json McastReceiver::results() const {
  const std::lock_guard lock(mutex_);
  nlohmann::json r = stats_;
  r["content_errors"] = content_errors_copy_;
  return r;
}

void McastReceiver::fold_results(nlohmann::json& run, const std::string& id,
                                 const nlohmann::json& app) {
  auto count = [](const nlohmann::json& o, const char* key) {
    return o.contains(key) && o[key].is_number() ? o[key].get<std::uint64_t>() : 0;
  };
  for (const char* key : {"lost_before_retry", "recovered", "lost_after_retry"}) {
    const std::string k = std::string("mcast_") + key;
    run[k] = count(run, k.c_str()) + count(app, key);
  }
  if (!run.contains("mcast_receivers") || !run["mcast_receivers"].is_object()) {
    run["mcast_receivers"] = nlohmann::json::object();
  }
  run["mcast_receivers"][id] = app;
}

}  // namespace daqflow::apps::mcast
