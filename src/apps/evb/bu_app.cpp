#include "bu_app.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "daqflow/apps/fed/event_numbers.hpp"
#include "daqflow/wire/evb.hpp"

namespace daqflow::apps::evb {

namespace {

constexpr std::int64_t kOutputCheckNs = 50'000'000;

}  // namespace

void BuilderUnit::release() {
  if (output_) {
    if (auto r = output_->close(); !r)
      spdlog::warn("{}: closing the output: {}", id(), r.error().message());
    while (output_->poll_done() != nullptr) {
    }
    publish_written();
    files_written_.add(*output_);
  }
  for (auto& b : batches_) b.clear();
  if (builder_) builder_->clear();
  to_evm_.clear();
  output_.reset();
  endpoint_ = nullptr;
}

// On the agent thread, and in release() once the agent has stopped: one writer at a time.
void BuilderUnit::publish_written() {
  const output::OutputStats stats = output_->stats();
  if (stats.events_written > written_published_) {
    events_written_->add_single_writer(stats.events_written - written_published_);
  }
  written_published_ = stats.events_written;
  if (stats.events_over_cap > not_written_published_) {
    events_not_written_->add_single_writer(stats.events_over_cap - not_written_published_);
  }
  not_written_published_ = stats.events_over_cap;
  if (stats.events_dropped > dropped_published_) {
    events_dropped_->add_single_writer(stats.events_dropped - dropped_published_);
  }
  dropped_published_ = stats.events_dropped;
}

void BuilderUnit::ru_gone(AppIndex ru, const std::string& why) {
  const int position = builder_->position_of(ru);
  if (position < 0) return;
  auto& reason = ru_lost_why_[static_cast<std::size_t>(position)];
  if (reason.empty()) reason = why;
  builder_->ru_lost(static_cast<std::size_t>(position));
}

void BuilderUnit::on_part(Completion& c, std::int64_t now) {
  messages_in_->add_single_writer();
  bytes_in_->add_single_writer(c.size);
  wire::PayloadStatus detail = wire::PayloadStatus::ok;
  switch (builder_->on_part(c.peer, c.message, now, &detail)) {
    case PartOutcome::first:
      if (requested_ > 0) --requested_;
      break;
    case PartOutcome::added:
      break;
    case PartOutcome::late:
      parts_late_->add_single_writer();
      break;
    case PartOutcome::duplicate:
      parts_duplicate_->add_single_writer();
      break;
    case PartOutcome::unknown:
      break;
    case PartOutcome::malformed:
      fail("malformed block " + std::to_string(c.message.tag) + " from " + topology_.name(c.peer) +
           ": " +
           (detail == wire::PayloadStatus::ok ? std::string("its header names another RU")
                                              : std::string(wire::to_string(detail))));
      break;
    case PartOutcome::no_slot:
      fail(topology_.name(c.peer) + " sent block " + std::to_string(c.message.tag) + " while all " +
           std::to_string(window_) + " blocks in flight are open: more blocks than requested");
      break;
  }
}

void BuilderUnit::on_peer_gone(AppIndex peer, std::string_view reason, bool rejected) {
  const bool error = !reason.empty();
  if (error && peer == topology_.evm && !halting()) {
    if (!rejected) {
      // Dialed again; its part of the blocks open here is not given up on (the fence that
      // follows drops those blocks).
      evm_link_lost(reason);
      return;
    }
    fail("the EVM '" + topology_.name(peer) + "' is lost: " + std::string(reason));
  }
  // The EVM closing in order is the end of the run: nothing more goes to it.
  if (peer == topology_.evm) to_evm_.drop(peer);
  if (error && !rejected && !halting() && peer != topology_.evm) {
    ru_link_lost(peer, reason);
  } else if (error) {
    spdlog::warn("{}: RU '{}' lost: {}", id(), topology_.name(peer), reason);
    ru_gone(peer, "connection failed: " + std::string(reason));
    // Refused here (a corrupted or malformed message): the RU is alive and serves the other
    // BUs, and every later event of this BU would be incomplete. This BU steps out instead, and
    // the EVM gives what it has not written to BUs that can build it whole. A connection that
    // broke may be a RU that died: its events are flagged incomplete, as everywhere.
    if (rejected && !halting() && peer != topology_.evm) {
      fail("no data from RU '" + topology_.name(peer) + "' any more: its message was refused (" +
           std::string(reason) + ")");
    }
  } else {
    ru_gone(peer, "closed its connection");
  }
}

int BuilderUnit::build(std::int64_t now) {
  int n = 0;
  while (!unsubmitted_.empty() && output_->submit(unsubmitted_.front())) {
    unsubmitted_.erase(unsubmitted_.begin());
    ++n;
  }
  while (!free_.empty() && !failed()) {
    const int slot = builder_->ready(now);
    if (slot < 0) break;
    output::OutputBatch* batch = free_.back();
    free_.pop_back();
    ++in_output_;
    const BuildResult r = builder_->build(slot, *batch);
    acks_[batch_index(batch)] =
        AckInfo{r.block_id, r.generation, r.built, r.incomplete, r.bytes, r.corrupted, 0};
    if (first_build_ns_.load(std::memory_order_relaxed) == 0)
      first_build_ns_.store(now, std::memory_order_relaxed);
    last_build_ns_.store(now, std::memory_order_relaxed);
    assembly_.add(now - r.first_ns);
    ++n;
    if (r.incomplete > 0 && (fail_on_incomplete_ || !warned_incomplete_)) {
      const auto missing = static_cast<std::size_t>(r.missing_ru);
      const std::string& why = ru_lost_why_[missing];
      const std::string what =
          "block " + std::to_string(r.block_id) + " (from " +
          fed::event_name(batch->events.front().number) + ", " +
          std::to_string(batch->events.size()) + " events, generation " +
          std::to_string(r.generation) + ") is incomplete: no data from RU '" +
          topology_.name(topology_.rus[missing]) + "' (" +
          (why.empty() ? "nothing within timeout_ms = " + std::to_string(timeout_ms_) + " ms"
                       : why) +
          (r.missing_count > 1 ? ", and " + std::to_string(r.missing_count - 1) + " more RU(s)"
                               : "") +
          ")";
      if (fail_on_incomplete_) {
        fail(what + "; on_incomplete is fail");
      } else {
        warned_incomplete_ = true;
        spdlog::warn("{}: {}; written flagged (further ones are only counted)", id(), what);
      }
    }
    if (r.corrupted > 0 && !warned_corrupt_) {
      warned_corrupt_ = true;
      spdlog::warn("{}: corrupted event(s) in block {}: {} (further ones are only counted)", id(),
                   r.block_id, r.problem);
    }
    unasked_.push_back(batch);
  }
  return n;
}

// Asks the EVM for the right to write each built block (exactly once: docs/reliability.md).
int BuilderUnit::ask(std::int64_t now) {
  int n = 0;
  // While a RU link is down, and until the leave that follows is out, nothing is offered: blocks
  // built meanwhile must reach the EVM after it took them back.
  if (!evm_up()) return 0;
  if (!send_leave_and_rejoin() && (leave_pending_ || any_ru_down())) return 0;
  for (auto* list : {&reask_, &unasked_}) {
    while (!list->empty() && to_evm_.has_room()) {
      output::OutputBatch* batch = list->front();
      AckInfo& info = acks_[batch_index(batch)];
      info.asked_ns = now;
      const auto payload = encode_ack(info);
      (void)to_evm_.push(wire::MessageType::commit_request, info.block_id, payload);
      list->erase(list->begin());
      awaiting_.push_back(batch);
      ++n;
    }
  }
  return n;
}

void BuilderUnit::on_commit(const wire::Commit& c, std::int64_t now) {
  const auto it =
      std::find_if(awaiting_.begin(), awaiting_.end(), [&](const output::OutputBatch* b) {
        const AckInfo& info = acks_[batch_index(b)];
        return info.block_id == c.block_id && info.generation == c.generation;
      });
  if (it == awaiting_.end()) return;  // dropped by a fence meanwhile
  output::OutputBatch* batch = *it;
  awaiting_.erase(it);
  const AckInfo& info = acks_[batch_index(batch)];
  if (c.verdict != wire::CommitVerdict::granted) {
    events_fenced_->add_single_writer(std::uint64_t{info.built} + info.incomplete);
    recycle(batch);
    return;
  }
  // Nothing is kept by a non-durable output, so the EVM re-assigns such a BU's blocks when it
  // loses it, grants included: a grant is good only within the lease, which ends before the EVM
  // can have lost this BU. A grant that came later (an EVM or a link that stalled) is asked for
  // again: the EVM grants a block still this BU's again, and fences one it took back. Dropped
  // instead, the block would stay open at the EVM, which holds every later block's data at the
  // RUs until it closes.
  if (!durable_ && now - info.asked_ns >= topology_.grant_lease_ns) {
    grants_late_->add_single_writer();
    reask_.push_back(batch);
    return;
  }
  events_built_->add_single_writer(info.built);
  events_incomplete_->add_single_writer(info.incomplete);
  events_corrupted_->add_single_writer(info.corrupted);
  bytes_built_->add_single_writer(info.bytes);
  blocks_built_->add_single_writer();
  if (!output_->submit(batch)) unsubmitted_.push_back(batch);
}

void BuilderUnit::on_fence(const wire::Fence& f, std::int64_t /*now*/) {
  if (f.epoch <= epoch_) return;
  epoch_ = f.epoch;
  const std::uint32_t open = builder_->drop_open();
  std::uint64_t events = 0;
  for (output::OutputBatch* batch : unasked_) {
    const AckInfo& info = acks_[batch_index(batch)];
    events += std::uint64_t{info.built} + info.incomplete;
    recycle(batch);
  }
  unasked_.clear();
  events_fenced_->add_single_writer(events);
  // Blocks whose commit answer has not come are asked about again: the EVM may have granted one
  // (then it stays this BU's, and the answer is granted again) and the answer may have been lost
  // with a failed connection; the others are answered fenced and dropped then. A later fence
  // keeps them for asking too: they were asked for once.
  reask_.insert(reask_.end(), awaiting_.begin(), awaiting_.end());
  awaiting_.clear();
  requested_ = 0;
  spdlog::warn(
      "{}: the EVM declared this BU lost: {} block(s) being built and {} built event(s) not yet "
      "asked for dropped, {} block(s) asked about again; rejoining under epoch {}",
      id(), open, events, reask_.size(), epoch_);
  // Sent by send_leave_and_rejoin(), once every RU link is up. A leave still to go is moot: the
  // fence took back what it would have.
  rejoin_pending_ = true;
  leave_pending_ = false;
  (void)send_leave_and_rejoin();
}

void BuilderUnit::ru_link_lost(transport::AppIndex ru, std::string_view why) {
  const int position = topology_.ru_position(ru);
  if (position < 0) return;
  const auto pos = static_cast<std::size_t>(position);
  if (ru_down_[pos]) {
    // Dialing it again failed: the RU is gone. Its events are flagged incomplete (and a RU is
    // not survivable: the run fails).
    ru_down_[pos] = false;
    spdlog::warn("{}: RU '{}' lost: {}", id(), topology_.name(ru), why);
    ru_gone(ru, "connection failed: " + std::string(why));
    return;
  }
  // Until it is known whether the RU lives, nothing built here is offered to the EVM: blocks
  // open here may miss what was in flight on the link.
  ru_down_[pos] = true;
  ru_down_ns_[pos] = clock_->now_ns();
  spdlog::warn("{}: the link to RU '{}' failed ({}); dialing it again for up to timeout_ms", id(),
               topology_.name(ru), why);
  if (auto r = endpoint_->connect(ru); !r) ru_link_lost(ru, r.error().message());
}

bool BuilderUnit::check_ru_links() {
  bool down = false;
  for (std::size_t pos = 0; pos < ru_down_.size(); ++pos) {
    if (!ru_down_[pos]) continue;
    const transport::AppIndex ru = topology_.rus[pos];
    if (endpoint_->connected(ru)) {
      // The RU lives and the link is back, but what was in flight on it is gone: this BU
      // leaves. The leave reaches the EVM before any request to write a block built since (one
      // ordered link), so the EVM takes those blocks back and fences this BU; they come whole
      // from the RUs to the BUs left, and this BU rejoins.
      ru_down_[pos] = false;
      leave_pending_ = true;
      spdlog::warn(
          "{}: the link to RU '{}' is back; leaving: the EVM re-assigns this BU's "
          "blocks, and it rejoins",
          id(), topology_.name(ru));
    } else if (halting()) {
      ru_down_[pos] = false;
      ru_gone(ru, "its link failed, and the run is halting");
    } else if (clock_->now_ns() - ru_down_ns_[pos] > timeout_ms_ * 1'000'000) {
      // Not back within timeout_ms (a RU that died; some transports never say so): its events
      // are flagged incomplete, as for any RU whose data stops coming.
      ru_down_[pos] = false;
      spdlog::warn("{}: RU '{}' lost: its link is not back after {} ms", id(), topology_.name(ru),
                   timeout_ms_);
      ru_gone(ru, "its link failed and was not made again within timeout_ms");
    } else {
      down = true;
    }
  }
  return down;
}

bool BuilderUnit::send_leave_and_rejoin() {
  if (check_ru_links()) return false;
  // Both carry this BU's epoch: the one it leaves, then the one it comes back under.
  const auto send = [this](wire::MessageType type) {
    wire::Fence f;
    f.bu = endpoint_->self();
    f.epoch = epoch_;
    std::array<std::byte, wire::kFenceSize> payload{};
    wire::encode(f, payload);
    return to_evm_.push(type, epoch_, payload);
  };
  if (leave_pending_) {
    if (!send(wire::MessageType::leave)) return false;
    leave_pending_ = false;
  }
  if (rejoin_pending_) {
    if (!send(wire::MessageType::rejoin)) return false;
    rejoin_pending_ = false;
  }
  return true;
}

void BuilderUnit::evm_link_lost(std::string_view why) {
  const std::string evm = topology_.name(topology_.evm);
  if (evm_down_) {
    fail("the EVM '" + evm + "' is lost: " + std::string(why));
    return;
  }
  evm_down_ = true;
  evm_down_ns_ = clock_->now_ns();
  to_evm_.drop(topology_.evm);
  spdlog::warn("{}: the link to the EVM '{}' failed ({}); dialing it again", id(), evm, why);
  if (auto r = endpoint_->connect(topology_.evm); !r) {
    fail("the EVM '" + evm + "' is lost: " + r.error().message());
  }
}

bool BuilderUnit::evm_up() {
  if (!evm_down_) return true;
  if (!endpoint_->connected(topology_.evm)) {
    // Halting with the EVM out of reach, or out of reach for long: what this BU holds cannot be
    // settled with it.
    if (halting()) {
      fail("the EVM '" + topology_.name(topology_.evm) + "' is lost while halting");
    } else if (clock_->now_ns() - evm_down_ns_ > evm_redial_ms_ * 1'000'000) {
      fail("the EVM '" + topology_.name(topology_.evm) + "' is lost: its link is not back after " +
           std::to_string(evm_redial_ms_) + " ms (evm_redial_ms)");
    }
    return false;
  }
  // The EVM lost this BU when the connection failed, and took back what it had not granted;
  // what it said meanwhile (answers, a fence) is gone. The leave gets a fence again, the fence
  // makes this BU ask again about its blocks awaiting an answer and rejoin; acknowledgements
  // that may have been lost go again.
  evm_down_ = false;
  to_evm_.revive(topology_.evm);
  requested_ = 0;
  leave_pending_ = true;
  reack_pending_ = true;
  reack_to_ = recent_next_;
  reack_from_ = recent_next_ - std::min(recent_next_, recent_acks_.size());
  spdlog::warn("{}: the link to the EVM '{}' is back; leaving, to be fenced and rejoin", id(),
               topology_.name(topology_.evm));
  return true;
}

void BuilderUnit::recycle(output::OutputBatch* batch) {
  batch->clear();  // drops the received buffers: RU chunks or receive buffers go back
  free_.push_back(batch);
  --in_output_;
}

std::array<std::byte, wire::kBlockAckSize> BuilderUnit::encode_ack(const AckInfo& info) const {
  wire::BlockAck a;
  a.block_id = info.block_id;
  a.bu = endpoint_->self();
  a.generation = info.generation;
  a.built = info.built;
  a.incomplete = info.incomplete;
  a.bytes = info.bytes;
  std::array<std::byte, wire::kBlockAckSize> payload{};
  wire::encode(a, payload);
  return payload;
}

bool BuilderUnit::acknowledge(output::OutputBatch* batch) {
  if (evm_down_) return false;  // kept until the EVM is back
  const AckInfo& info = acks_[batch_index(batch)];
  if (!to_evm_.push(wire::MessageType::block_ack, info.block_id, encode_ack(info))) return false;
  recent_acks_[recent_next_++ % recent_acks_.size()] = info;
  return true;
}

int BuilderUnit::finish() {
  int n = 0;
  while (!unacked_.empty() && acknowledge(unacked_.front())) {
    recycle(unacked_.front());
    unacked_.erase(unacked_.begin());
    ++n;
  }
  while (output::OutputBatch* done = output_->poll_done()) {
    if (output_->failed()) {
      // Perhaps not (all) written: the EVM keeps it in doubt; the salvage of the files decides.
      fail(output_->failure());
      recycle(done);
      ++n;
      continue;
    }
    if (unacked_.empty() && acknowledge(done)) {
      recycle(done);
    } else {
      unacked_.push_back(done);
    }
    ++n;
  }
  return n;
}

int BuilderUnit::request(std::int64_t now) {
  int n = 0;
  if (!evm_up()) return 0;
  (void)send_leave_and_rejoin();
  if (reack_pending_ && !leave_pending_) {
    // Oldest first. (Acks pushed meanwhile may take the place of some: those go twice too.)
    const std::size_t size = recent_acks_.size();
    while (reack_from_ < reack_to_ && to_evm_.has_room()) {
      const AckInfo& info = recent_acks_[reack_from_++ % size];
      (void)to_evm_.push(wire::MessageType::block_ack, info.block_id, encode_ack(info));
    }
    reack_pending_ = reack_from_ < reack_to_;
  }
  if (producing() && !rejoin_pending_ && !leave_pending_ && !any_ru_down()) {
    const std::uint32_t busy = builder_->open() + in_output_ + requested_;
    if (busy < window_ && to_evm_.has_room()) {
      wire::EventRequest r;
      r.bu = endpoint_->self();
      r.events_per_block = events_per_request_;
      r.blocks = window_ - busy;
      r.epoch = epoch_;
      std::array<std::byte, wire::kEventRequestSize> payload{};
      wire::encode(r, payload);
      if (to_evm_.push(wire::MessageType::event_request, 0, payload)) {
        requested_ += r.blocks;
        requests_sent_->add_single_writer(r.blocks);
        ++n;
      }
    }
  }
  if (now >= next_heartbeat_ns_ && to_evm_.has_room()) {
    wire::Heartbeat h;
    h.sender = endpoint_->self();
    h.sequence = heartbeat_seq_++;
    std::array<std::byte, wire::kHeartbeatSize> payload{};
    wire::encode(h, payload);
    (void)to_evm_.push(wire::MessageType::heartbeat, h.sequence, payload);
    next_heartbeat_ns_ = now + heartbeat_ns_;
  }
  return n;
}

void BuilderUnit::publish(std::int64_t now) {
  if (now >= next_output_check_ns_) {
    next_output_check_ns_ = now + kOutputCheckNs;
    publish_written();
    // Any failure of the output fails the BU, whether or not it came with a counted write error
    // (e.g. a file that would have been overwritten).
    if (const std::string f = output_->failure(); !f.empty()) fail(f);
  }
  blocks_open_->set(static_cast<double>(builder_->open() + in_output_));
}

int BuilderUnit::work(std::int64_t now) {
  if (failed()) return 0;
  int work = build(now);
  work += ask(now);
  work += output_->progress();
  work += finish();
  work += request(now);
  // A link to the EVM that failed after this round's poll refuses the post; the fanout then
  // drops the EVM, and the link's own completion (the next poll) says what follows: dial again
  // (evm_link_lost), fail (a refused message), or the end of the run (closed in order). Failing
  // here instead lost a BU whose link broke and would have come back (seen under load, where
  // the window between the poll and the post is wide).
  gone_.clear();
  work += to_evm_.post(*endpoint_, gone_);
  publish(now);
  return work;
}

nlohmann::json BuilderUnit::results() const {
  const std::uint64_t built = events_built_->value();
  const std::uint64_t incomplete = events_incomplete_->value();
  const std::uint64_t bytes = bytes_built_->value();
  const std::int64_t from = first_build_ns_.load(std::memory_order_relaxed);
  const std::int64_t to = last_build_ns_.load(std::memory_order_relaxed);
  const double seconds = from > 0 && to > from ? static_cast<double>(to - from) * 1e-9 : 0.0;
  return {
      {"files", files_written_.to_json()},
      {"events_built", built},
      {"events_incomplete", incomplete},
      {"events_corrupted", events_corrupted_->value()},
      {"events_written", events_written_->value()},
      {"events_not_written", events_not_written_->value()},
      {"events_dropped", events_dropped_->value()},
      {"events_fenced", events_fenced_->value()},
      {"bytes_built", bytes},
      {"seconds", seconds},
      {"event_rate_hz", seconds > 0 ? static_cast<double>(built + incomplete) / seconds : 0.0},
      {"throughput_mb_s", seconds > 0 ? static_cast<double>(bytes) / 1e6 / seconds : 0.0},
      {"assembly_us",
       {{"p50", assembly_.percentile_us(0.5)},
        {"p90", assembly_.percentile_us(0.9)},
        {"p99", assembly_.percentile_us(0.99)},
        {"count", assembly_.count()}}},
  };
}

}  // namespace daqflow::apps::evb
