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
  gone_.clear();
  posted += to_manager_.post(*endpoint_, gone_);
  return posted;
}

bool TsBuilder::control_idle() const {
  return to_manager_.idle() &&
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

}  // namespace daqflow::apps::timeslice
