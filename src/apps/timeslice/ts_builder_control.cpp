// The ts_builder's control traffic: its acknowledgements to the inputs, the scheduled order's
// turns, and its reports to the manager.

#include <spdlog/spdlog.h>

#include <algorithm>

#include "ts_builder_app.hpp"
#include "ts_schedule.hpp"

namespace daqflow::apps::timeslice {

void TsBuilder::send_ack(std::size_t input, std::uint64_t index, wire::TsAckStatus status) {
  if (!assembly_.alive(input)) return;
  wire::TsAck a;
  a.index = index;
  a.status = status;
  std::array<std::byte, wire::kTsAckSize> bytes{};
  wire::encode(a, bytes);
  if (!acks_[input].push(wire::MessageType::ts_ack, index, bytes)) {
    fail("the log of acknowledgements to input '" + detail::id_of(ids_, inputs_[input]) +
         "' is full: it takes none");
  }
}

// A peer gone needs nothing more: what an input retained is its own affair then, and the
// manager's connection is watched by its own completion.
int TsBuilder::post_control() {
  int posted = 0;
  // Scheduled, the acknowledgements keep to the inputs' order, so that no two builders answer
  // one input at once. In turns, an input hears from this builder in its turn (and as it is
  // given), or while it asks for none (it has nothing to send here). In fixed slots, in slot s
  // input i sends to builder (i + s) mod N, and this builder answers the inputs sending here in
  // that slot only. Once the run winds down everything goes.
  const bool scheduled = schedule_.builders > 0 && producing();
  const std::int64_t slot =
      scheduled && !in_turns() ? schedule_clock_ns(*clock_) / schedule_.slot_ns : -1;
  for (std::size_t i = 0; i < acks_.size(); ++i) {
    if (scheduled && in_turns() && i != turns_.holder && turns_.asked[i] != 0) continue;
    if (slot >= 0 &&
        (i + static_cast<std::uint64_t>(slot)) % schedule_.builders != schedule_.position) {
      continue;
    }
    gone_.clear();
    posted += acks_[i].post(*endpoint_, gone_);
  }
  if (manager_down_ns_ == 0) {
    posted += redo_done();
    gone_.clear();
    posted += to_manager_.post(*endpoint_, gone_);
  }
  return posted;
}

bool TsBuilder::control_idle() const {
  return to_manager_.idle() && redo_from_ >= redo_to_ &&
         std::all_of(acks_.begin(), acks_.end(), [](const ControlLog& log) { return log.idle(); });
}

bool TsBuilder::send_to_manager(wire::MessageType type, std::uint64_t tag,
                                std::span<const std::byte> bytes) {
  return data_path().send_copy(*control_pool_, manager_, type, tag, bytes) == SendStatus::ok;
}

void TsBuilder::send_report() {
  const transport::EndpointStats s = endpoint_->stats();
  wire::TsReport r;
  r.epoch = epoch_;
  r.building = static_cast<std::uint32_t>(assembly_.building());
  r.free_buffers = recv_buffers_ > s.recv_pool_in_use ? recv_buffers_ - s.recv_pool_in_use : 0;
  r.done = done_total_;
  std::array<std::byte, wire::kTsReportSize> bytes{};
  wire::encode(r, bytes);
  (void)send_to_manager(wire::MessageType::ts_report, epoch_, bytes);
}

void TsBuilder::on_turn(const Completion& c, std::size_t input, std::int64_t now) {
  wire::TsTurn t;
  if (c.message.segment_count != 1 ||
      wire::decode(c.message.segments[0].bytes(), t) != wire::PayloadStatus::ok) {
    messages_malformed_->add_single_writer();
    return;
  }
  turn_messages_->add_single_writer();
  switch (t.kind) {
    case wire::TsTurnKind::give:
      messages_malformed_->add_single_writer();  // a builder's to give, not an input's
      return;
    case wire::TsTurnKind::ask:
      // From the holder, a request that crossed the turn on its way (asked again before it
      // came): the turn's own.
      if (turns_.holder == input) return;
      break;
    case wire::TsTurnKind::hand_back:
    case wire::TsTurnKind::hand_back_and_ask:
      // One after the turn was taken back hands nothing back (and may still ask).
      if (turns_.holder == input) {
        turns_.holder = Turns::kNone;
        turns_.active_ns = now;
      }
      break;
  }
  if (t.kind != wire::TsTurnKind::hand_back && assembly_.alive(input)) turns_.asked[input] = 1;
  // The turn goes on at once, not after the round's other messages (the contributions that
  // came with it are checked after it left).
  if (turns_.holder == Turns::kNone && give_turn(now) > 0) data_path().flush();
}

int TsBuilder::check_received() {
  int n = 0;
  for (Received& r : received_) {
    on_contributions(r.completion, r.input, r.now);
    ++n;
  }
  received_.clear();
  return n;
}

int TsBuilder::give_turn(std::int64_t now) {
  if (turns_.holder != Turns::kNone) {
    if (now - turns_.active_ns < kTurnTakeBackNs) return 0;
    turns_taken_back_->add_single_writer();
    spdlog::warn("{}: input '{}' sent nothing in its turn for {} ms; the turn goes on", id(),
                 detail::id_of(ids_, inputs_[turns_.holder]), kTurnTakeBackNs / 1'000'000);
    turns_.holder = Turns::kNone;
  }
  // The inputs in turn, each after the one before it in the inputs' order: as the barrel
  // shifter has it, input i sends here after input i + 1 did.
  const std::size_t n = inputs_.size();
  for (std::size_t k = 1; k <= n; ++k) {
    const std::size_t i = (turns_.last + n - k) % n;
    if (turns_.asked[i] == 0) continue;
    gone_.clear();
    (void)acks_[i].post(*endpoint_, gone_);
    std::array<std::byte, wire::kTsTurnSize> bytes{};
    wire::encode(wire::TsTurn{wire::TsTurnKind::give}, bytes);
    const SendStatus s =
        data_path().send_copy(*control_pool_, inputs_[i], wire::MessageType::ts_turn, 0, bytes);
    // An input that cannot take its turn now (its link full, the pool out) is asked again next
    // round; the next one gets the turn meanwhile (a lost input is dropped elsewhere).
    if (s != SendStatus::ok) continue;
    turns_.holder = i;
    turns_.active_ns = now;
    turns_.asked[i] = 0;
    turns_.last = i;
    turns_given_->add_single_writer();
    return 1;
  }
  return 0;
}

void TsBuilder::input_link_failed(std::size_t input, std::string_view why) {
  if (turns_.holder == input) turns_.holder = Turns::kNone;
  turns_.asked[input] = 0;
  const std::string name = detail::id_of(ids_, inputs_[input]);
  if (endpoint_->connected(inputs_[input])) {
    // It dialed again before the old link's failure came through: the new one carries on (the
    // acknowledgements' log may have taken the old one's end for the input's).
    acks_[input].revive(inputs_[input]);
    if (end_told_[input] != 0) {
      end_told_[input] = 0;
      end_all_told_ = false;
    }
    spdlog::warn("{}: the old link to input '{}' failed ({}); it dialed again", id(), name, why);
    return;
  }
  acks_[input].drop(inputs_[input]);  // the input sends again what they were about
  input_down_ns_[input] = std::max<std::int64_t>(1, clock_->now_ns());
  any_input_down_ = true;
  spdlog::warn("{}: the link to input '{}' failed ({}); waiting up to {} ms for it to dial again",
               id(), name, why, redial_ns_ / 1'000'000);
}

void TsBuilder::heard_from(std::size_t input) {
  if (input_down_ns_[input] == 0) return;
  // The input sends again what this builder has not acknowledged: parts held here are
  // duplicates, parts of timeslices written are answered late.
  input_down_ns_[input] = 0;
  acks_[input].revive(inputs_[input]);
  // The run's end told on the old link may be gone with it: told again.
  if (end_told_[input] != 0) {
    end_told_[input] = 0;
    end_all_told_ = false;
  }
  spdlog::warn("{}: input '{}' dialed again", id(), detail::id_of(ids_, inputs_[input]));
}

void TsBuilder::check_input_links() {
  any_input_down_ = false;
  const std::int64_t now = clock_->now_ns();
  for (std::size_t i = 0; i < inputs_.size(); ++i) {
    const std::int64_t since = input_down_ns_[i];
    if (since == 0) continue;
    if (endpoint_->connected(inputs_[i])) {
      heard_from(i);
    } else if (now - since > redial_ns_ || winding_down()) {
      input_down_ns_[i] = 0;
      lose_input(i, "its link failed and it did not dial again within " +
                        std::to_string(redial_ns_ / 1'000'000) + " ms");
    } else {
      any_input_down_ = true;
    }
  }
}

void TsBuilder::manager_link_failed(std::string_view why) {
  const std::string name = detail::id_of(ids_, manager_);
  if (manager_down_ns_ != 0) {
    fail("the manager '" + name + "' is lost: " + std::string(why));
    return;
  }
  to_manager_.drop(manager_);
  if (auto r = endpoint_->connect(manager_); !r) {
    fail("the manager '" + name + "' is lost: " + std::string(why) +
         "; dialing it again: " + r.error().message());
    return;
  }
  manager_down_ns_ = std::max<std::int64_t>(1, clock_->now_ns());
  spdlog::warn("{}: the link to the manager '{}' failed ({}); dialing it again for up to {} ms",
               id(), name, why, redial_ns_ / 1'000'000);
}

bool TsBuilder::check_manager_link() {
  if (manager_down_ns_ == 0) return true;
  const std::string name = detail::id_of(ids_, manager_);
  if (!endpoint_->connected(manager_)) {
    if (clock_->now_ns() - manager_down_ns_ > redial_ns_) {
      fail("the manager '" + name + "' is lost: its link is not back after " +
           std::to_string(redial_ns_ / 1'000'000) + " ms (redial_ms)");
    }
    return false;
  }
  // The manager lost this builder when the link failed: it gave the timeslices it had not
  // granted here to the others, and fences this builder at its next report. What went either
  // way on the old link may be gone: the timeslices awaiting an answer ask again (one granted
  // before is granted again), and the last ts_done messages go again (each counts once).
  manager_down_ns_ = 0;
  to_manager_.revive(manager_);
  // Asked again, in order with the ts_done messages and under the epoch each was asked with
  // (a fence may have come on the new link already); one the log has no room for is asked again
  // as it comes due, under the epoch then.
  std::size_t asked = 0;
  assembly_.each_awaiting([&](TsAssembly::Timeslice& t) {
    const wire::TsCommit q{t.index, t.asked_epoch, wire::CommitAnswer::ask};
    std::array<std::byte, wire::kTsCommitSize> bytes{};
    wire::encode(q, bytes);
    if (to_manager_.push(wire::MessageType::ts_commit, t.index, bytes)) {
      ++asked;
    } else {
      t.awaiting_commit = false;
    }
  });
  redo_to_ = done_count_;
  redo_from_ = redo_to_ - std::min<std::uint64_t>(redo_to_, recent_done_.size());
  spdlog::warn(
      "{}: the link to the manager '{}' is back; {} commit request(s) and the last {} ts_done "
      "message(s) go again, and it fences and takes back this builder",
      id(), name, asked, redo_to_ - redo_from_);
  return true;
}

int TsBuilder::redo_done() {
  int pushed = 0;
  for (; redo_from_ < redo_to_ && to_manager_.has_room(); ++redo_from_, ++pushed) {
    const wire::TsDone& d = recent_done_[redo_from_ % recent_done_.size()];
    std::array<std::byte, wire::kTsDoneSize> bytes{};
    wire::encode(d, bytes);
    (void)to_manager_.push(wire::MessageType::ts_done, d.index, bytes);  // has room
  }
  return pushed;
}

void TsBuilder::on_end_proposed(const Completion& c, std::size_t input) {
  const auto mark = end_mark_of(c);
  if (!mark) {
    data_path().reject();
    return;
  }
  if (mark->kind == EndMark::ended) {
    (void)check_received();  // its contributions came before
    inputs_said_ended_->add_single_writer();
    input_ended(input);
    return;
  }
  end_votes_->add_single_writer();
  end_vote_.propose(input, mark->index);
}

int TsBuilder::tell_end() {
  // Decided once: an input lost or ended after that changes nothing for those not yet told.
  if (!end_decided_) {
    end_decided_ = end_vote_.decided([this](std::size_t i) { return assembly_.alive(i); });
    if (!end_decided_) return 0;
    spdlog::info("{}: the inputs halted: the run ends before timeslice {}, the furthest one's",
                 id(), *end_decided_);
  }
  const std::uint64_t end = *end_decided_;
  std::array<std::byte, wire::kTsAssignSize> bytes{};
  wire::encode(end_mark(end, EndMark::made), bytes);
  int told = 0;
  bool all = true;
  for (std::size_t i = 0; i < inputs_.size(); ++i) {
    if (end_told_[i] != 0 || !assembly_.alive(i)) continue;
    const SendStatus s =
        data_path().send_copy(*control_pool_, inputs_[i], wire::MessageType::ts_assign, end, bytes);
    // Told, or the input is gone (it needs nothing more); otherwise again next round.
    if (s == SendStatus::ok || s == SendStatus::closed || s == SendStatus::invalid) {
      end_told_[i] = 1;
      told += s == SendStatus::ok ? 1 : 0;
    } else {
      all = false;
    }
  }
  end_all_told_ = all;
  return told;
}

}  // namespace daqflow::apps::timeslice
