#include "ts_input_app.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "daqflow/core/synced_clock.hpp"
#include "daqflow/wire/crc32c.hpp"
#include "daqflow/wire/endian.hpp"

namespace daqflow::apps::timeslice {

namespace {

// Waiting for a send buffer to come back: buffers return through the endpoint's poll, which a
// wait does not always wake for.
constexpr std::int64_t kStarvedWaitUs = 100;

}  // namespace

Result<void> TsInput::enable() {
  if (start_ns_ == 0) start_ns_ = clock_->now_ns();
  return ok();
}

void TsInput::release() {
  outbox_.clear();
  batches_.clear();  // (empty between sends)
  batch_pool_ = nullptr;
  previous_ = TsInterval{};
  plugin_.reset();  // its I/O threads stopped, its state freed
  endpoint_ = nullptr;
  data_pool_ = header_pool_ = nullptr;
}

bool TsInput::replay_interval(TsInterval& out) {
  std::byte* base = out.buffer.data();
  std::uint64_t bytes = 0;
  if (!replay_->read(intervals_, out.buffer.span(), bytes)) {
    fail("replay: cannot read recorded timeslice " + std::to_string(intervals_) +
         " (the archive changed since Configure?)");
    return false;
  }
  // The replay's own start times and stream offsets; the rest as recorded.
  const std::uint64_t first_idx = intervals_ * geometry_.duration_ns();
  out.first_offset = stream_offset_;
  std::uint32_t used = 0;
  for (std::uint32_t j = 0; j < geometry_.core; ++j) {
    std::byte* at = base + std::size_t{j} * wire::kMicrosliceDescriptorSize;
    wire::store_le64(at + 8, first_idx + std::uint64_t{j} * geometry_.microslice_ns);
    wire::store_le64(at + 24, stream_offset_ + used);
    used += wire::load_le32(at + 20);
    if (j + 1 == geometry_.overlap) out.overlap_bytes = used;
  }
  out.content_bytes = used;
  stream_offset_ += used;
  ++intervals_;
  microslices_->add_single_writer(geometry_.core);
  return true;
}

void TsInput::plugin_failed(const std::string& what) {
  fail(plugin_->name() + ": interval " + std::to_string(intervals_) + ": " + what);
}

bool TsInput::plugin_interval(TsInterval& out) {
  std::byte* base = out.buffer.data();
  const std::size_t descriptors = std::size_t{geometry_.core} * wire::kMicrosliceDescriptorSize;
  std::byte* content = base + descriptors;
  daqflow_readout_request r{};
  r.index = intervals_;
  r.data = content;
  r.capacity = out.buffer.capacity() - descriptors;
  r.microslices = plugin_slices_.data();
  switch (plugin_->produce(r)) {
    case DAQFLOW_READOUT_READY:
      break;
    case DAQFLOW_READOUT_NOT_READY:
      return false;
    case DAQFLOW_READOUT_NO_ROOM:
      plugin_failed("asks for " + std::to_string(r.size) +
                    " bytes, more than its max_event_bytes (" + std::to_string(max_size_) +
                    ") per microslice allows");
      return false;
    case DAQFLOW_READOUT_FAILED:
      plugin_failed(plugin_->error());
      return false;
    default:
      plugin_failed("produce returned an unknown status");
      return false;
  }
  if (r.count != geometry_.core) {
    plugin_failed(std::to_string(r.count) + " microslices described, an interval has " +
                  std::to_string(geometry_.core));
    return false;
  }
  const std::uint64_t first_idx = intervals_ * geometry_.duration_ns();
  out.first_offset = stream_offset_;
  std::uint64_t used = 0;
  for (std::uint32_t j = 0; j < geometry_.core; ++j) {
    const daqflow_readout_microslice& m = plugin_slices_[j];
    const std::uint64_t start = first_idx + std::uint64_t{j} * geometry_.microslice_ns;
    if (m.start_ns != start) {
      plugin_failed("microslice " + std::to_string(j) + " starts at " + std::to_string(m.start_ns) +
                    " ns, " + std::to_string(start) + " ns expected");
      return false;
    }
    if (m.size > max_size_ || used + m.size > r.size) {
      plugin_failed("microslice " + std::to_string(j) + " of " + std::to_string(m.size) +
                    " bytes passes max_event_bytes or what was written (" + std::to_string(r.size) +
                    " bytes)");
      return false;
    }
    wire::MicrosliceDescriptor d;
    d.eq_id = eq_id_;
    d.sys_id = m.sys_id != 0 ? m.sys_id : sys_id_;
    d.sys_ver = m.sys_ver != 0 ? m.sys_ver : sys_ver_;
    d.idx = start;
    d.size = m.size;
    d.offset = stream_offset_ + used;
    d.flags = static_cast<std::uint16_t>(m.flags & ~DAQFLOW_READOUT_CRC_VALID);
    if ((m.flags & DAQFLOW_READOUT_CRC_VALID) != 0) {
      d.flags |= wire::kMicrosliceCrcValid;
      d.crc = m.crc;
    } else if (crc_) {
      d.flags |= wire::kMicrosliceCrcValid;
      d.crc = wire::crc32c({content + used, m.size});
    }
    wire::encode(d, std::span<std::byte, wire::kMicrosliceDescriptorSize>(
                        base + std::size_t{j} * wire::kMicrosliceDescriptorSize,
                        wire::kMicrosliceDescriptorSize));
    used += m.size;
    if (j + 1 == geometry_.overlap) out.overlap_bytes = static_cast<std::uint32_t>(used);
  }
  if (used != r.size) {
    plugin_failed("the microslices' sizes add up to " + std::to_string(used) + " bytes, " +
                  std::to_string(r.size) + " written");
    return false;
  }
  out.content_bytes = static_cast<std::uint32_t>(used);
  stream_offset_ += used;
  ++intervals_;
  microslices_->add_single_writer(geometry_.core);
  return true;
}

void TsInput::generate_interval(TsInterval& out) {
  std::byte* base = out.buffer.data();
  std::byte* content = base + std::size_t{geometry_.core} * wire::kMicrosliceDescriptorSize;
  const std::uint64_t first_idx = intervals_ * geometry_.duration_ns();
  out.first_offset = stream_offset_;
  std::uint32_t used = 0;
  for (std::uint32_t j = 0; j < geometry_.core; ++j) {
    const double drawn = core::sample(size_, rng_);
    const auto size = static_cast<std::uint32_t>(
        std::clamp<double>(std::llround(drawn), 8.0, static_cast<double>(max_size_)));
    wire::MicrosliceDescriptor d;
    d.eq_id = eq_id_;
    d.sys_id = sys_id_;
    d.sys_ver = sys_ver_;
    d.idx = first_idx + std::uint64_t{j} * geometry_.microslice_ns;
    d.size = size;
    d.offset = stream_offset_ + used;
    std::byte* c = content + used;
    wire::store_le64(c, d.idx);
    if (crc_) {
      d.flags = wire::kMicrosliceCrcValid;
      d.crc = wire::crc32c({c, size});
    }
    wire::encode(d, std::span<std::byte, wire::kMicrosliceDescriptorSize>(
                        base + std::size_t{j} * wire::kMicrosliceDescriptorSize,
                        wire::kMicrosliceDescriptorSize));
    used += size;
    if (j + 1 == geometry_.overlap) out.overlap_bytes = used;
  }
  out.content_bytes = used;
  stream_offset_ += used;
  ++intervals_;
  microslices_->add_single_writer(geometry_.core);
}

int TsInput::generate(std::int64_t now) {
  if (!(producing() || making_to_end()) || start_ns_ == 0) return 0;
  int made = 0;
  // Interval j exists once its end has passed (real time) or at once; timeslice j - 1 is ready
  // with it (its overlap is interval j's first microslices).
  while (made < intervals_per_round_) {
    if (count_ > 0 && intervals_ >= count_ + 1) break;
    if (outbox_.end() != UINT64_MAX && intervals_ >= outbox_.end() + 1) break;
    if (real_time_ &&
        now - start_ns_ < static_cast<std::int64_t>((intervals_ + 1) * geometry_.duration_ns())) {
      break;
    }
    if (intervals_ > 0 && outbox_.size() == retained_cap_) break;
    TsInterval next;
    next.buffer = data_pool_->acquire();
    if (!next.buffer) {
      // Every buffer is lent to a builder (in flight, or held until it is written): generating
      // waits for one to come back, without spinning.
      starved_ = true;
      break;
    }
    starved_ = false;
    if (real_time_ &&
        now - start_ns_ >= static_cast<std::int64_t>((intervals_ + 2) * geometry_.duration_ns())) {
      intervals_late_->add_single_writer();
    }
    if (replay_) {
      if (!replay_interval(next)) break;
    } else if (plugin_) {
      if (!plugin_interval(next)) break;
    } else {
      generate_interval(next);
    }
    if (previous_.buffer) {
      TsInterval overlap_source;
      overlap_source.buffer = next.buffer.share();
      overlap_source.first_offset = next.first_offset;
      overlap_source.content_bytes = next.content_bytes;
      overlap_source.overlap_bytes = next.overlap_bytes;
      (void)outbox_.add(intervals_ - 2, std::move(previous_), std::move(overlap_source));
    }
    previous_ = std::move(next);
    ++made;
  }
  if (made > 0 && !producing()) end_since_ns_ = now;  // towards the run's end: not stalled
  return made;
}

void TsInput::lose_builder(std::size_t position, const std::string& why) {
  builder_down_ns_[position] = 0;
  TsOutbox::Loss loss;
  if (!outbox_.lose(position, loss)) return;
  turns_[position] = Turn{};
  const std::string name = detail::id_of(ids_, builders_[position]);
  {
    const std::lock_guard lock(lost_mutex_);
    lost_builders_.push_back(name);
  }
  if (has_manager_) {
    // The manager decides where its timeslices go (and may wait for it to come back).
    spdlog::warn("{}: builder '{}' lost ({}); its timeslices wait for the manager", id(), name,
                 why);
    return;
  }
  {
    const std::lock_guard lock(lost_mutex_);
    sent_again_[name] = std::move(loss.sent);
  }
  if (!outbox_.any_alive()) {
    fail("every builder is lost (the last: '" + name + "', " + why + "); " +
         std::to_string(outbox_.size()) + " timeslices cannot be built");
    return;
  }
  spdlog::warn("{}: builder '{}' lost ({}); {} timeslice(s) it held go to the builders left", id(),
               name, why, loss.moved);
}

void TsInput::on_ack(const Completion& c) {
  // One acknowledgement or several back to back (a builder's of one round), in the segments
  // the transport delivers.
  for (const transport::Segment& s : c.message.pieces()) {
    if (s.length == 0 || s.length % wire::kTsAckSize != 0) {
      messages_malformed_->add_single_writer();
      return;
    }
  }
  for (const transport::Segment& s : c.message.pieces()) {
    for (std::uint32_t at = 0; at < s.length; at += wire::kTsAckSize) {
      wire::TsAck a;
      if (wire::decode(s.bytes().subspan(at, wire::kTsAckSize), a) != wire::PayloadStatus::ok) {
        messages_malformed_->add_single_writer();
        continue;
      }
      if (!outbox_.ack(a.index)) continue;  // acknowledged before: the answer to a resend
      ++acked_total_;
      timeslices_acked_->add_single_writer();
    }
  }
}

void TsInput::on_assign(const Completion& c) {
  wire::TsAssign a;
  if (c.message.segment_count != 1 ||
      wire::decode(c.message.segments[0].bytes(), a) != wire::PayloadStatus::ok) {
    messages_malformed_->add_single_writer();
    return;
  }
  apply_assign(a);
}

int TsInput::listen(std::int64_t now) {
  const std::uint64_t malformed = listener_->malformed();
  const int n = listener_->pump(now, [this](const wire::TsAssign& a) { apply_assign(a); });
  if (listener_->malformed() > malformed) {
    messages_malformed_->add_single_writer(listener_->malformed() - malformed);
  }
  if (n > 0) {
    const std::lock_guard lock(lost_mutex_);
    listener_stats_ = listener_->stats();
  }
  if (const std::uint64_t lost = listener_->stats().lost_after_retry; lost > 0) {
    fail("the manager's multicast: " + std::to_string(lost) +
         " datagram(s) of assignments lost after retry");
    return n;
  }
  if (echo_end_) {
    // The end came after every assignment before it (the channel delivers in order): the
    // manager, which drains until every input has said so, may go.
    std::array<std::byte, wire::kTsAssignSize> bytes{};
    wire::encode(wire::TsAssign{outbox_.end(), wire::kNoApplication, 0}, bytes);
    const SendStatus s = data_path().send_copy(*header_pool_, manager_,
                                               wire::MessageType::ts_assign, outbox_.end(), bytes);
    // Sent, or the manager is gone (it then waits for nothing); otherwise again next round.
    if (s == SendStatus::ok || s == SendStatus::closed || s == SendStatus::invalid) {
      echo_end_ = false;
    }
  }
  return n;
}

void TsInput::apply_assign(const wire::TsAssign& a) {
  if (a.builder == wire::kNoApplication) {
    echo_end_ = listener_.has_value();
    // The run ends before timeslice a.index: what was made beyond is no timeslice of it.
    const std::size_t dropped = outbox_.end_before(a.index);
    after_end_->add_single_writer(dropped);
    spdlog::info("{}: the run ends before timeslice {} ({} made beyond it dropped)", id(), a.index,
                 dropped);
    return;
  }
  const auto b = std::find(builders_.begin(), builders_.end(), a.builder);
  if (b == builders_.end()) {
    messages_malformed_->add_single_writer();
    return;
  }
  // Timeslice k is made with interval k + 1: those below intervals_ - 1 are made.
  const std::uint64_t made = intervals_ >= 2 ? intervals_ - 1 : 0;
  (void)outbox_.assign(a.index, static_cast<std::size_t>(b - builders_.begin()), a.epoch, made);
}

void TsInput::on_peer_gone(AppIndex peer, std::string_view reason) {
  if (has_manager_ && peer == manager_) {
    // Once the manager has said where the run ends, it has nothing more to tell: it halts
    // before the inputs and closes its connections, which ends nothing here. A link that failed
    // before: the manager dials it again and tells this input its assignments again.
    if (outbox_.end() != UINT64_MAX) {
      spdlog::debug("{}: the manager closed its connection after the run's end", id());
    } else if (!reason.empty() && !winding_down() && manager_down_ns_ == 0) {
      manager_down_ns_ = std::max<std::int64_t>(1, clock_->now_ns());
      spdlog::warn(
          "{}: the link to the manager failed ({}); waiting up to {} ms for it to dial "
          "again",
          id(), reason, redial_ns_ / 1'000'000);
    } else if (!winding_down()) {
      fail("the connection to the manager failed: " +
           (reason.empty() ? std::string("closed") : std::string(reason)));
    }
    return;
  }
  const auto it = std::find(builders_.begin(), builders_.end(), peer);
  if (it == builders_.end()) return;
  const auto position = static_cast<std::size_t>(it - builders_.begin());
  // A builder that closes once this input is done (or halting with nothing for it) is not lost;
  // one that goes while it holds this input's timeslices is.
  if (!outbox_.holds(position) && done_making()) return;
  if (!reason.empty() && !done_making() && outbox_.alive(position) &&
      builder_down_ns_[position] == 0) {
    builder_link_failed(position, reason);
    return;
  }
  lose_builder(position, reason.empty() ? std::string("closed its connection")
                                        : "connection failed: " + std::string(reason));
}

void TsInput::builder_link_failed(std::size_t position, std::string_view why) {
  const std::string name = detail::id_of(ids_, builders_[position]);
  if (auto r = endpoint_->connect(builders_[position]); !r) {
    lose_builder(position, "connection failed: " + std::string(why) +
                               "; dialing it again: " + r.error().message());
    return;
  }
  builder_down_ns_[position] = std::max<std::int64_t>(1, clock_->now_ns());
  any_builder_down_ = true;
  spdlog::warn("{}: the link to builder '{}' failed ({}); dialing it again for up to {} ms", id(),
               name, why, redial_ns_ / 1'000'000);
}

void TsInput::check_manager_link(std::int64_t now) {
  if (endpoint_->connected(manager_)) {
    manager_down_ns_ = 0;
    // With multicast assignments, its only word to the manager: said again (it may have been
    // on the old link).
    if (listener_ && outbox_.end() != UINT64_MAX) echo_end_ = true;
    spdlog::warn("{}: the manager dialed again", id());
  } else if (now - manager_down_ns_ > redial_ns_) {
    manager_down_ns_ = 0;
    // Past the run's end (or halting) there is nothing more to hear from it.
    if (outbox_.end() != UINT64_MAX || winding_down()) return;
    fail("the connection to the manager failed and it did not dial again within " +
         std::to_string(redial_ns_ / 1'000'000) + " ms");
  }
}

void TsInput::check_builder_links(std::int64_t now) {
  any_builder_down_ = false;
  for (std::size_t b = 0; b < builders_.size(); ++b) {
    const std::int64_t since = builder_down_ns_[b];
    if (since == 0) continue;
    const std::string name = detail::id_of(ids_, builders_[b]);
    if (endpoint_->connected(builders_[b])) {
      // What was in flight on the old link, and the builder's acknowledgements of it, may be
      // gone: everything it holds of this input goes again (what it has is answered late or
      // taken as a duplicate), and the turns start afresh.
      builder_down_ns_[b] = 0;
      turns_[b] = Turn{};
      if (!end_said_.empty()) end_said_[b] = 0;  // what this input made: said again if halted
      const std::size_t again = outbox_.resend_to(b);
      spdlog::warn("{}: the link to builder '{}' is back; {} timeslice(s) sent to it again", id(),
                   name, again);
    } else if (now - since > redial_ns_ || done_making()) {
      builder_down_ns_[b] = 0;
      lose_builder(b, "its link failed and was not made again within " +
                          std::to_string(redial_ns_ / 1'000'000) + " ms");
    } else {
      any_builder_down_ = true;
    }
  }
}

int TsInput::work(std::int64_t now) {
  if (failed()) return 0;
  int work = listener_ ? listen(now) : 0;
  if (any_builder_down_) check_builder_links(now);
  if (manager_down_ns_ != 0) check_manager_link(now);
  if (!has_manager_ && halting()) work += propose_end(now);
  work += generate(now);
  work += send(now);
  timeslices_retained_->set(static_cast<double>(outbox_.size()));
  if (!sampler_.started()) {
    if (acked_total_ > 0) sampler_.start(now, bytes_sent_total_, acked_total_);
  } else {
    (void)sampler_.tick(now, bytes_sent_total_, acked_total_);
  }
  const bool all_made = count_ > 0 && intervals_ >= count_ + 1;
  if (outbox_.empty() && all_made && !finished()) set_finished();
  return work;
}

void TsInput::wait_for_work(std::chrono::microseconds timeout) {
  std::chrono::microseconds cap{1000};
  if (producing() || making_to_end()) {
    if (order_ == SendOrder::scheduled && slot_ns_ > 0) {
      if (!timer_slack_set_) {
        keep_slot_time();
        timer_slack_set_ = true;
      }
      // Until the next slot begins (a wake-up for an acknowledgement comes through the endpoint).
      cap = until_next_slot(slot_clock_ns(), slot_ns_);
    }
    if (!real_time_ && !starved_ && outbox_.size() < retained_cap_ &&
        (count_ == 0 || intervals_ < count_ + 1) &&
        (outbox_.end() == UINT64_MAX || intervals_ < outbox_.end() + 1)) {
      return;  // as fast as possible: generate again at once
    }
    if (starved_) cap = std::min(cap, std::chrono::microseconds(kStarvedWaitUs));
    if (real_time_) {
      const std::int64_t due =
          start_ns_ + static_cast<std::int64_t>((intervals_ + 1) * geometry_.duration_ns());
      const std::int64_t wait_us = std::max<std::int64_t>(0, (due - clock_->now_ns()) / 1000);
      cap = std::min(cap, std::chrono::microseconds(wait_us));
    }
  }
  if (cap.count() == 0) return;
  endpoint_->wait(std::min(timeout, cap));
}

nlohmann::json TsInput::results() const {
  if (microslices_ == nullptr) return nlohmann::json::object();
  nlohmann::json r;
  metrics_->counters(r);
  r["eq_id"] = eq_id_;
  r["in_flight"] = in_flight_;
  r["timeslices_retained"] = static_cast<std::uint64_t>(timeslices_retained_->value());
  detail::put_rates(r, sampler_, "timeslices_per_s");
  const std::lock_guard lock(lost_mutex_);
  r["lost_builders"] = lost_builders_;
  if (listener_) r["multicast"] = listener_stats_;
  return r;
}

void TsInput::fold_results(nlohmann::json& run, const std::string& id, const nlohmann::json& app) {
  auto count = [](const nlohmann::json& o, const char* key) {
    return o.contains(key) && o[key].is_number() ? o[key].get<std::uint64_t>() : 0;
  };
  for (const char* key : {"microslices", "contributions_resent"}) {
    run[key] = count(run, key) + count(app, key);
  }
  run["input_mb_per_s"] = run.value("input_mb_per_s", 0.0) + app.value("mb_per_s", 0.0);
  if (!run.contains("ts_inputs") || !run["ts_inputs"].is_object()) {
    run["ts_inputs"] = nlohmann::json::object();
  }
  run["ts_inputs"][id] = {{"timeslices_acked", count(app, "timeslices_acked")},
                          {"lost_builders", app.value("lost_builders", nlohmann::json::array())}};
}

Result<nlohmann::json> TsInput::action(std::string_view name, const nlohmann::json& args) {
  if (name == "sent_again") {
    const std::string builder = args.value("builder", std::string());
    const std::lock_guard lock(lost_mutex_);
    const auto it = sent_again_.find(builder);
    if (it == sent_again_.end()) {
      return nlohmann::json{{"lost", false}, {"timeslices", nlohmann::json::array()}};
    }
    return nlohmann::json{{"lost", true}, {"timeslices", it->second}};
  }
  return Application::action(name, args);
}

}  // namespace daqflow::apps::timeslice
