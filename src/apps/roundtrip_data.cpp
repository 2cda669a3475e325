// The data path of the round-trip benchmark: the initiator's ping/pong timing loop and the
// responder's zero-copy echo. Nothing here allocates; see roundtrip.hpp for the protocol.
#include <algorithm>
#include <cstdlib>

#include "daqflow/apps/pattern.hpp"
#include "daqflow/core/clock.hpp"
#include "daqflow/wire/header.hpp"
#include "roundtrip.hpp"

namespace daqflow::apps {

namespace {

std::size_t check_echo(const transport::Message& m, std::uint64_t seq, AppIndex src) {
  const std::size_t total = m.size();
  std::size_t offset = 0;
  for (const transport::Segment& s : m.pieces()) {
    const std::size_t bad = check_ends(s.bytes(), offset, total, seq, src);
    if (bad != kPatternOk) return bad;
    offset += s.length;
  }
  return kPatternOk;
}

}  // namespace

bool RoundTrip::post_ping() {
  const std::uint64_t size = sizes_[size_index_];
  const std::uint64_t tag = tag_ + 1;
  transport::Message m;
  if (size > 0) {
    core::Buffer buffer = pool_->acquire();
    if (!buffer) return false;
    write_ends({buffer.data(), size}, 0, size, tag, self_);
    m.add(std::move(buffer), 0, static_cast<std::uint32_t>(size));
  }
  m.type = wire::MessageType::ping;
  m.tag = tag;
  const bool last =
      !settling_ && size_index_ + 1 == sizes_.size() && round_ + 1 == warmup_ + iterations_;
  m.flags = last ? wire::kFlagLast : 0;
  sent_ns_ = core::monotonic_ns();
  const SendStatus status = endpoint_->post_send(peer_, m);
  switch (status) {
    case SendStatus::ok:
      tag_ = tag;
      awaiting_ = true;
      in_flight_.store(1, std::memory_order_release);
      return true;
    case SendStatus::back_pressure:
    case SendStatus::not_connected:
      return false;  // try again on the next round
    case SendStatus::closed:
      peer_lost("is closed");
      return false;
    case SendStatus::too_large:
    case SendStatus::invalid:
      fail("ping of " + std::to_string(size) + " bytes to '" + peer_id_ +
           "' refused: " + std::string(transport::to_string(status)));
      return false;
  }
  return false;
}

bool RoundTrip::from_peer(const Completion& c, const char* what) {
  messages_in_->add_single_writer();
  bytes_in_->add_single_writer(c.message.size());
  if (c.peer == peer_) return true;
  fail(std::string("unexpected ") + what + " from application #" + std::to_string(c.peer) +
       "; expected " + what + "s from '" + peer_id_ + "'");
  return false;
}

void RoundTrip::on_pong(Completion& c, std::int64_t now_ns) {
  if (!from_peer(c, "pong")) return;
  const std::uint64_t size = sizes_[size_index_];
  if (!awaiting_ || c.message.tag != tag_ || c.message.size() != size) {
    fail("unexpected pong from '" + peer_id_ + "': tag " + std::to_string(c.message.tag) + ", " +
         std::to_string(c.message.size()) + " bytes; expected tag " + std::to_string(tag_) + ", " +
         std::to_string(size) + " bytes");
    return;
  }
  if (const std::size_t bad = check_echo(c.message, tag_, self_); bad != kPatternOk) {
    fail("pong " + std::to_string(tag_) + " from '" + peer_id_ + "' (" + std::to_string(size) +
         " bytes) is corrupted at byte " + std::to_string(bad));
    return;
  }
  awaiting_ = false;
  in_flight_.store(0, std::memory_order_release);
  if (settling_) {
    settle(now_ns - sent_ns_, now_ns);
    return;
  }
  if (round_ >= warmup_) rtt_ns_[round_ - warmup_] = now_ns - sent_ns_;
  if (++round_ < warmup_ + iterations_) return;
  // A size is complete: summarise it (sorting iterations_ values between two round trips).
  points_[size_index_].size = size;
  points_[size_index_].rtt = summarize_rtt(rtt_ns_);
  points_done_.store(size_index_ + 1, std::memory_order_release);
  round_ = 0;
  if (++size_index_ == sizes_.size()) {
    set_finished();
    return;
  }
  size_gauge_->set(static_cast<double>(sizes_[size_index_]));
}

// The first round trips of a run are slower than the rest for a while (threads being woken from
// their idle strategies' sleeps, the executives' start-up work beside them): the sweep starts
// once two windows in a row agree, after settle_ms at least, or after ten times that anyway.
void RoundTrip::settle(std::int64_t rtt_ns, std::int64_t now_ns) {
  if (settle_start_ns_ == 0) settle_start_ns_ = sent_ns_;
  settle_round_trips_.fetch_add(1, std::memory_order_relaxed);
  window_[window_count_++] = rtt_ns;
  if (window_count_ < kSettleWindow) return;
  window_count_ = 0;
  auto sorted = window_;
  std::nth_element(sorted.begin(), sorted.begin() + kSettleWindow / 2, sorted.end());
  const std::int64_t median = sorted[kSettleWindow / 2];
  const std::int64_t elapsed = now_ns - settle_start_ns_;
  const bool agree =
      previous_median_ns_ > 0 && std::abs(median - previous_median_ns_) * 10 <= previous_median_ns_;
  previous_median_ns_ = median;
  if (elapsed < settle_ns_ || (!agree && elapsed < 10 * settle_ns_)) return;
  settling_ = false;
  settled_.store(agree, std::memory_order_relaxed);
  settle_took_ns_.store(elapsed, std::memory_order_relaxed);
  round_ = 0;
}

void RoundTrip::register_handlers(runtime::DataPath& path) {
  if (initiator_) {
    // The pong is timed on its own reading of the clock, not the round's.
    path.on(wire::MessageType::pong,
            [this](Completion& c, std::int64_t) { on_pong(c, core::monotonic_ns()); });
  } else {
    path.on(wire::MessageType::ping, [this](Completion& c, std::int64_t) { on_ping(c); });
  }
  path.on_sent([this](const Completion& c) {
    messages_out_->add_single_writer();
    bytes_out_->add_single_writer(c.size);
    if (!initiator_ && in_flight_.load(std::memory_order_relaxed) > 0) {
      in_flight_.fetch_sub(1, std::memory_order_acq_rel);
    }
  });
  path.on_peer_gone([this](AppIndex peer, std::string_view reason, bool) {
    if (peer != peer_) return;
    if (!reason.empty()) {
      peer_lost("failed: " + std::string(reason));
    } else if (initiator_) {
      peer_lost("closed the connection during the sweep");
    } else {
      // The initiator ends its sweep, or is halted: it sends nothing more. Normal.
      for (auto& m : pending_) m.clear();
      pending_count_ = 0;
      in_flight_.store(0, std::memory_order_release);
    }
  });
  path.on_work([this](std::int64_t) { return initiator_ ? initiator_work() : responder_work(); });
  path.drained_when([this] { return in_flight_.load(std::memory_order_acquire) == 0; });
}

int RoundTrip::initiator_work() {
  return !awaiting_ && producing() && !finished() && post_ping() ? 1 : 0;
}

void RoundTrip::on_ping(Completion& c) {
  if (!from_peer(c, "ping")) return;
  if (pending_count_ == kPendingPongs) {
    fail("more than " + std::to_string(kPendingPongs) + " pings from '" + peer_id_ +
         "' wait for their pongs; the initiator sends one at a time");
    return;
  }
  // The pong is the ping's own segments sent back: no copy, no new buffer.
  transport::Message& pong = pending_[(pending_head_ + pending_count_) % kPendingPongs];
  pong.clear();
  pong.type = wire::MessageType::pong;
  pong.tag = c.message.tag;
  pong.flags = c.message.flags;
  for (std::uint8_t s = 0; s < c.message.segment_count; ++s) {
    transport::Segment& seg = c.message.segments[s];
    pong.add(std::move(seg.buffer), seg.offset, seg.length);
  }
  ++pending_count_;
  in_flight_.fetch_add(1, std::memory_order_acq_rel);
  if ((c.message.flags & wire::kFlagLast) != 0) last_echoed_ = true;
}

int RoundTrip::flush_pongs() {
  int posted = 0;
  while (pending_count_ > 0) {
    transport::Message& pong = pending_[pending_head_];
    const SendStatus status = endpoint_->post_send(peer_, pong);
    if (status == SendStatus::back_pressure || status == SendStatus::not_connected) break;
    if (status == SendStatus::closed) {
      peer_lost("is closed");
      break;
    }
    if (status != SendStatus::ok) {
      fail("pong of " + std::to_string(pong.size()) + " bytes to '" + peer_id_ +
           "' refused: " + std::string(transport::to_string(status)));
      break;
    }
    pong.clear();
    pending_head_ = (pending_head_ + 1) % kPendingPongs;
    --pending_count_;
    ++posted;
  }
  return posted;
}

int RoundTrip::responder_work() {
  const int posted = flush_pongs();
  if (last_echoed_ && in_flight_.load(std::memory_order_acquire) == 0) {
    set_finished();
  }
  return posted;
}

}  // namespace daqflow::apps
