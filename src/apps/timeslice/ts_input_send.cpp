// The ts_input's sending: contributions alone or in batches, in the chaotic or the scheduled
// order (ts_input_app.hpp).
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>

#include "ts_batch.hpp"
#include "ts_end_vote.hpp"
#include "ts_input_app.hpp"

namespace daqflow::apps::timeslice {

wire::Contribution TsInput::header_of(const TsOutbox::Timeslice& r) const {
  wire::Contribution c;
  c.index = r.index;
  c.start_ns = r.index * geometry_.duration_ns();
  c.eq_id = eq_id_;
  c.sys_id = sys_id_;
  c.sys_ver = sys_ver_;
  c.core_microslices = geometry_.core;
  c.epoch = r.epoch;
  c.microslices = geometry_.core + geometry_.overlap;
  c.content_size = std::uint64_t{r.core.content_bytes} + r.next.overlap_bytes;
  return c;
}

void TsInput::count_sent(std::uint64_t bytes, bool again) {
  bytes_sent_->add_single_writer(bytes);
  bytes_sent_total_ += bytes;
  ++contributions_sent_;
  (again ? contributions_resent_ : timeslices_sent_)->add_single_writer();
}

bool TsInput::send_contribution(TsOutbox::Timeslice& r) {
  const wire::Contribution c = header_of(r);
  const std::uint64_t bytes = wire::payload_size(c);
  if (batch_pool_ == nullptr || !batched(bytes, batch_bytes_)) return send_one(r);
  const auto builder = static_cast<std::size_t>(r.builder);
  Batch& b = batches_[builder];
  if (b.used + bytes > batch_bytes_ && !flush_batch(builder)) return false;
  if (!b.buffer) {
    b.buffer = batch_pool_->acquire();
    if (!b.buffer) return send_one(r);  // every batch is at a builder still: alone
  }
  // The contribution as its builder reads it: the descriptor, the microslice descriptors (core,
  // overlap), the contents (core, overlap).
  std::byte* at = b.buffer.data() + b.used;
  wire::encode(c, std::span<std::byte, wire::kContributionSize>(at, wire::kContributionSize));
  at += wire::kContributionSize;
  const auto copy = [&at](const TsInterval& from, std::size_t offset, std::size_t n) {
    std::memcpy(at, from.buffer.data() + offset, n);
    at += n;
  };
  const std::size_t core_descriptors =
      std::size_t{geometry_.core} * wire::kMicrosliceDescriptorSize;
  copy(r.core, 0, core_descriptors);
  copy(r.next, 0, std::size_t{geometry_.overlap} * wire::kMicrosliceDescriptorSize);
  copy(r.core, core_descriptors, r.core.content_bytes);
  copy(r.next, core_descriptors, r.next.overlap_bytes);
  if (b.items.empty()) b.first = r.index;
  b.items.push_back({&r, bytes, outbox_.mark_sent(r)});
  b.used += static_cast<std::uint32_t>(bytes);
  return true;
}

bool TsInput::flush_batch(std::size_t builder) {
  Batch& b = batches_[builder];
  if (b.items.empty()) return true;
  transport::Message m;
  m.type = wire::MessageType::ts_contribution;
  m.tag = b.first;
  m.add(std::move(b.buffer), 0, b.used);
  const SendStatus status = endpoint_->post_send(builders_[builder], m);
  b.used = 0;
  if (status == SendStatus::ok) {
    for (const Batch::Item& i : b.items) count_sent(i.bytes, i.again);
    b.items.clear();
    return true;
  }
  m.clear();
  for (const Batch::Item& i : b.items) outbox_.unsend(*i.timeslice, i.again);
  b.items.clear();
  if (status != SendStatus::back_pressure && status != SendStatus::not_connected) {
    lose_builder(builder, "sending failed: " + std::string(transport::to_string(status)));
  }
  return false;
}

bool TsInput::flush_batches() {
  bool all = true;
  for (std::size_t k = 0; k < batches_.size(); ++k) all = flush_batch(k) && all;
  return all;
}

bool TsInput::send_one(TsOutbox::Timeslice& r) {
  core::Buffer h = header_pool_->acquire();
  if (!h) return false;
  const wire::Contribution c = header_of(r);
  wire::encode(c, std::span<std::byte, wire::kContributionSize>(h.data(), wire::kContributionSize));
  const auto descriptors =
      geometry_.core * static_cast<std::uint32_t>(wire::kMicrosliceDescriptorSize);
  transport::Message m;
  m.type = wire::MessageType::ts_contribution;
  m.tag = r.index;
  m.add(std::move(h), 0, wire::kContributionSize);
  m.add(r.core.buffer.share(), 0, descriptors);
  if (geometry_.overlap > 0) {
    m.add(r.next.buffer.share(), 0,
          geometry_.overlap * static_cast<std::uint32_t>(wire::kMicrosliceDescriptorSize));
  }
  m.add(r.core.buffer.share(), descriptors, r.core.content_bytes);
  if (r.next.overlap_bytes > 0) m.add(r.next.buffer.share(), descriptors, r.next.overlap_bytes);
  const AppIndex peer = builders_[static_cast<std::size_t>(r.builder)];
  const SendStatus status = endpoint_->post_send(peer, m);
  if (status == SendStatus::ok) {
    count_sent(wire::payload_size(c), outbox_.mark_sent(r));
    return true;
  }
  m.clear();
  if (status == SendStatus::back_pressure || status == SendStatus::not_connected) return false;
  lose_builder(static_cast<std::size_t>(r.builder),
               "sending failed: " + std::string(transport::to_string(status)));
  return false;
}

int TsInput::send(std::int64_t now) {
  if (failed()) return 0;
  const std::uint64_t before = contributions_sent_;
  const auto sent = [&] { return static_cast<int>(contributions_sent_ - before); };
  if (order_ == SendOrder::chaotic) {
    outbox_.each_unsent([&](TsOutbox::Timeslice& t) { return send_contribution(t); });
    (void)flush_batches();
    return sent();
  }
  if (slot_ns_ == 0) return send_in_turns(now);
  // Fixed slots (slot_us): slot s of the run's clock goes to builder (position + s) mod N, which
  // then gets every contribution this input has ready for it, oldest first. Slots are aligned on
  // the synchronised clock (a clock_client in this context corrects it), so that the inputs of
  // different hosts agree on whose slot it is. Slots this input slept through (a late wake-up)
  // are served now, in their order, at most one turn of the shifter late.
  const std::int64_t slot = slot_clock_ns() / slot_ns_;
  if (slot == last_slot_) return 0;
  const auto n = static_cast<std::int64_t>(builders_.size());
  const std::int64_t first = last_slot_ < 0 ? slot : std::max(last_slot_ + 1, slot - (n - 1));
  if (last_slot_ >= 0 && first > last_slot_ + 1) {
    slots_missed_->add_single_writer(static_cast<std::uint64_t>(first - last_slot_ - 1));
  }
  for (std::int64_t s = first; s <= slot; ++s) {
    const auto target =
        static_cast<std::size_t>((position_ + static_cast<std::uint64_t>(s)) % builders_.size());
    TsOutbox::Timeslice* next = outbox_.oldest_unsent_for(target);
    if (next == nullptr) {
      slots_empty_->add_single_writer();
      continue;
    }
    if (s < slot) slots_late_->add_single_writer();
    bool blocked = false;
    for (; next != nullptr && !blocked; next = outbox_.oldest_unsent_for(target)) {
      blocked = !send_contribution(*next);
    }
    if (!flush_batch(target) || blocked) {
      slots_blocked_->add_single_writer();
      last_slot_ = s - 1;  // the rest of this slot's batch next time
      return sent();
    }
  }
  last_slot_ = slot;
  return sent();
}

bool TsInput::send_turn(std::size_t b, wire::TsTurn turn) {
  std::array<std::byte, wire::kTsTurnSize> bytes{};
  wire::encode(turn, bytes);
  return data_path().send_copy(*header_pool_, builders_[b], wire::MessageType::ts_turn, 0, bytes) ==
         SendStatus::ok;
}

int TsInput::send_in_turns(std::int64_t now) {
  const std::uint64_t before = contributions_sent_;
  for (std::size_t b = 0; b < builders_.size(); ++b) {
    Turn& turn = turns_[b];
    if (!outbox_.alive(b)) continue;
    if (turn.held) {
      // The turn carries what is ready for the builder as it comes: one batch; the turn is
      // handed back once all of it went (a builder that pushes back keeps it here).
      const std::uint64_t sent_before = contributions_sent_;
      bool blocked = false;
      for (TsOutbox::Timeslice* next = outbox_.oldest_unsent_for(b); next != nullptr && !blocked;
           next = outbox_.oldest_unsent_for(b)) {
        blocked = !send_contribution(*next);
      }
      if (!flush_batch(b) || blocked) {
        slots_blocked_->add_single_writer();
        continue;
      }
      // An input that sent in its turn will most likely have more by the time the others had
      // theirs: it asks for the next turn with the hand-back, one message instead of two. Given
      // a turn with nothing to send, it hands it back and asks only when it has something.
      const bool again = contributions_sent_ > sent_before;
      const wire::TsTurnKind kind =
          again ? wire::TsTurnKind::hand_back_and_ask : wire::TsTurnKind::hand_back;
      if (send_turn(b, wire::TsTurn{kind})) {
        turn.held = false;
        turn.asked = again;
        turn.asked_ns = now;
      }
      continue;
    }
    // Asked again after a while: a request or a turn lost with a connection (the builder takes
    // a second request as the first).
    const bool due = !turn.asked || now - turn.asked_ns > kTurnAskAgainNs;
    if (due && outbox_.oldest_unsent_for(b) != nullptr &&
        send_turn(b, wire::TsTurn{wire::TsTurnKind::ask})) {
      turn.asked = true;
      turn.asked_ns = now;
    }
  }
  return static_cast<int>(contributions_sent_ - before);
}

void TsInput::on_turn(const Completion& c) {
  wire::TsTurn t;
  const auto b = std::find(builders_.begin(), builders_.end(), c.peer);
  if (b == builders_.end() || c.message.segment_count != 1 ||
      wire::decode(c.message.segments[0].bytes(), t) != wire::PayloadStatus::ok ||
      t.kind != wire::TsTurnKind::give) {
    messages_malformed_->add_single_writer();
    return;
  }
  Turn& turn = turns_[static_cast<std::size_t>(b - builders_.begin())];
  turn.held = true;
  turn.asked = false;
  turns_taken_->add_single_writer();
}

// Halted without a manager: every builder hears how many timeslices this input made, and one of
// them answers where the run ends, the furthest input's (on_agreed_end). Once it made its last
// and every one is acknowledged, it tells them it ended: a builder that still waits for its part
// of a timeslice (one a lost builder had acknowledged to it alone) writes that without it.
int TsInput::propose_end(std::int64_t now) {
  if (end_since_ns_ == 0) end_since_ns_ = std::max<std::int64_t>(1, now);
  int sent = say_to_builders(EndMark::made);
  if (outbox_.empty() && end_settled()) sent += say_to_builders(EndMark::ended);
  return sent;
}

int TsInput::say_to_builders(EndMark mark) {
  const auto said = static_cast<std::uint8_t>(static_cast<std::uint8_t>(mark) + 1);
  std::array<std::byte, wire::kTsAssignSize> bytes{};
  wire::encode(end_mark(made(), mark), bytes);
  int sent = 0;
  for (std::size_t b = 0; b < builders_.size(); ++b) {
    // In order: the vote before the end.
    if (end_said_[b] != said - 1) continue;
    if (!outbox_.alive(b)) {
      end_said_[b] = kEndedSaid;
      continue;
    }
    const SendStatus s = data_path().send_copy(*header_pool_, builders_[b],
                                               wire::MessageType::ts_assign, made(), bytes);
    // Said, or the builder is gone; otherwise again next round.
    if (s == SendStatus::ok || s == SendStatus::closed || s == SendStatus::invalid) {
      end_said_[b] = said;
      sent += s == SendStatus::ok ? 1 : 0;
    }
  }
  return sent;
}

void TsInput::on_agreed_end(const Completion& c) {
  const auto mark = end_mark_of(c);
  if (!mark || mark->kind != EndMark::made) {
    data_path().reject();
    return;
  }
  if (outbox_.end() != UINT64_MAX) return;  // every builder answers: the first answer stands
  const std::uint64_t end = mark->index;
  const std::uint64_t made_now = made();
  const std::size_t dropped = outbox_.end_before(end);
  after_end_->add_single_writer(dropped);
  end_since_ns_ = std::max<std::int64_t>(1, clock_->now_ns());
  spdlog::info(
      "{}: the inputs agree that the run ends before timeslice {} ({} to make, {} made "
      "beyond it dropped)",
      id(), end, end > made_now ? end - made_now : 0, dropped);
}

bool TsInput::ended_told() const {
  if (has_manager_) return true;
  return std::all_of(end_said_.begin(), end_said_.end(),
                     [](std::uint8_t said) { return said == kEndedSaid; });
}

bool TsInput::end_settled() const {
  if (has_manager_) return true;
  // Never enabled, or a count reached: nothing more to make, whatever the end.
  if (start_ns_ == 0 || (count_ > 0 && made() >= count_)) return true;
  bool unsaid = false;
  bool any_builder = false;
  for (std::size_t b = 0; b < builders_.size(); ++b) {
    if (!outbox_.alive(b)) continue;
    any_builder = true;
    unsaid = unsaid || end_said_[b] == 0;
  }
  if (!any_builder) return true;  // nobody to agree with
  if (!unsaid && outbox_.end() != UINT64_MAX && made() >= outbox_.end()) return true;
  // No answer (or no progress towards it) for that long: this input ends where it stands, and
  // the builders write the timeslices it did not make without it.
  return end_since_ns_ != 0 && clock_->now_ns() - end_since_ns_ > end_wait_ns_;
}

}  // namespace daqflow::apps::timeslice
