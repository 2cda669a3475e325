#include "sfc_app.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <bit>
#include <cmath>

#include "daqflow/apps/output/salvage.hpp"
#include "daqflow/wire/endian.hpp"
#include "daqflow/wire/evb.hpp"

namespace daqflow::apps::farm {

namespace {

constexpr std::int64_t kCheckPeriodNs = 10'000'000;
constexpr double kBurstSeconds = 0.01;
constexpr std::int64_t kBatchAgeNs = 20'000'000;

}  // namespace

void SubFarmController::release() {
  for (Stream& st : streams_) {
    if (!st.output) continue;
    if (auto r = st.output->close(); !r) {
      spdlog::warn("{}: closing the output of stream '{}': {}", id(), st.name, r.error().message());
    }
    while (output::OutputBatch* b = st.output->poll_done()) b->clear();
    if (st.filling != nullptr) st.filling->clear();
    files_written_.add(*st.output);
  }
  streams_.clear();
  retained_.clear();
  for (auto& p : pending_) p.message.clear();
  pending_count_ = 0;
  endpoint_ = nullptr;
  events_pool_ = control_pool_ = nullptr;
}

void SubFarmController::fence(AppIndex worker) {
  core::Buffer b = control_pool_->acquire();
  if (!b) return;  // the next heartbeat asks again
  wire::Fence f;
  f.bu = worker;
  f.epoch = dispatcher_->epoch_of(worker);
  wire::encode(f, std::span<std::byte, wire::kFenceSize>(b.data(), wire::kFenceSize));
  transport::Message m;
  m.type = wire::MessageType::fence;
  m.tag = f.epoch;
  m.add(std::move(b), 0, wire::kFenceSize);
  (void)endpoint_->post_send(worker, m);
  m.clear();
}

void SubFarmController::on_lost(AppIndex worker, const std::string& why) {
  std::string names;
  {
    const std::lock_guard lock(lost_mutex_);
    lost_workers_.push_back(detail::id_of(ids_, worker));
    for (const auto& n : lost_workers_) names += (names.empty() ? "" : ", ") + n;
  }
  const std::size_t alive = dispatcher_->workers().alive_count();
  spdlog::warn("{}: worker '{}' lost ({}); its events go to the {} worker(s) left", id(),
               detail::id_of(ids_, worker), why, alive);
  workers_alive_->set(static_cast<double>(alive));
  fence(worker);
  if (alive == 0 && (producing() || dispatcher_->outstanding() + dispatcher_->queued() > 0)) {
    fail("no worker left (lost: " + names + "); " +
         std::to_string(dispatcher_->outstanding() + dispatcher_->queued()) +
         " events cannot be decided");
  }
}

void SubFarmController::add_to(Stream& st, core::Buffer buffer, std::uint32_t size,
                               const wire::Decision& d, std::int64_t now) {
  if (st.filling == nullptr) {
    if (st.free.empty()) {
      // The disk is behind and the generator has not stopped yet: one more batch.
      output::OutputBatch& b = st.batches.emplace_back();
      st.free.push_back(&b);
    }
    st.filling = st.free.back();
    st.free.pop_back();
    st.filling->clear();
    st.filling_since_ns = now;
  }
  output::OutputBatch& b = *st.filling;
  output::BuiltEvent e;
  e.number = d.event;
  e.first_piece = static_cast<std::uint32_t>(b.pieces.size());
  e.piece_count = 1;
  e.size = size;
  b.pieces.push_back({buffer.data(), size});
  b.buffers.push_back(std::move(buffer));
  b.events.push_back(e);
}

void SubFarmController::on_decision(Completion& c, std::int64_t now) {
  const auto& seg = c.message.segments[0];
  wire::Decision d;
  const auto status = wire::decode(seg.bytes(), c.size, d);
  if (status != wire::PayloadStatus::ok ||
      (c.message.segment_count != 1 && d.verdict == wire::Verdict::accept)) {
    messages_malformed_->add_single_writer();
    spdlog::warn("{}: a malformed decision from '{}' dropped: {}", id(),
                 detail::id_of(ids_, c.peer),
                 status != wire::PayloadStatus::ok ? wire::to_string(status)
                                                   : std::string_view("output not contiguous"));
    return;
  }
  const int position = dispatcher_->workers().position_of(c.peer);
  const bool was_alive = position >= 0 && dispatcher_->workers().alive(std::size_t(position));
  std::uint32_t slot = 0;
  switch (dispatcher_->decide(c.peer, d, now, slot)) {
    case DecisionOutcome::decided: {
      const Retained& r = *retained_.find(slot);  // the dispatcher's slot: held
      latency_.add(now - r.admitted_ns);
      bytes_decided_ += r.size;
      (void)retained_.release(slot);
      auto& by = decided_by_[static_cast<std::size_t>(position)];
      by.store(by.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      if (d.verdict != wire::Verdict::accept) break;
      const auto size = static_cast<std::uint32_t>(wire::kDecisionSize + d.output_size);
      // The streams whose mask matches, in order; `unrouted` (last) only when none did.
      bool routed = false;
      for (Stream& st : streams_) {
        const bool take = st.unrouted ? !routed : st.mask == 0 || (st.mask & d.trigger_bits) != 0;
        if (!take) continue;
        add_to(st, seg.buffer.share(), size, d, now);
        routed = true;
      }
      break;
    }
    case DecisionOutcome::ready:
      if (!was_alive) {
        {
          const std::lock_guard lock(lost_mutex_);
          rejoined_workers_.push_back(detail::id_of(ids_, c.peer));
        }
        workers_alive_->set(static_cast<double>(dispatcher_->workers().alive_count()));
        spdlog::warn("{}: worker '{}' rejoined under epoch {}; it is served again", id(),
                     detail::id_of(ids_, c.peer), d.epoch);
      }
      break;
    case DecisionOutcome::late:
      if (!was_alive) fence(c.peer);
      break;
    case DecisionOutcome::unknown:
      messages_malformed_->add_single_writer();
      break;
  }
}

void SubFarmController::on_heartbeat(const Completion& c, std::int64_t now) {
  const int p = dispatcher_->workers().position_of(c.peer);
  if (p >= 0 && dispatcher_->workers().alive(static_cast<std::size_t>(p))) {
    dispatcher_->heard_from(c.peer, now);
  } else if (p >= 0) {
    fence(c.peer);  // lost and still sending: it must learn its new epoch
  }
}

int SubFarmController::generate(std::int64_t now) {
  if (!producing() || !inputs_.empty()) return 0;
  std::uint64_t limit = count_ > 0 ? count_ : UINT64_MAX;
  if (rate_hz_ > 0) {
    const double burst = std::max(1.0, rate_hz_ * kBurstSeconds);
    tokens_ = std::min(burst, tokens_ + rate_hz_ * static_cast<double>(now - refilled_ns_) * 1e-9);
    refilled_ns_ = now;
    limit = std::min(limit, next_event_ + static_cast<std::uint64_t>(tokens_));
  }
  if (disk_behind()) return 0;
  int made = 0;
  while (next_event_ < limit && made < 64 && dispatcher_->can_admit()) {
    core::Buffer b = events_pool_->acquire();
    if (!b) break;
    const double drawn = core::sample(size_, rng_);
    const auto size = static_cast<std::uint32_t>(
        std::clamp<double>(std::llround(drawn / 8.0) * 8.0, 8.0, static_cast<double>(max_size_)));
    wire::store_le64(b.data(), next_event_);
    Retained& r = retain(dispatcher_->admit(next_event_));
    r.data.add(std::move(b), 0, size);
    r.size = size;
    r.flags = 0;
    r.admitted_ns = now;
    ++next_event_;
    ++made;
    if (rate_hz_ > 0) tokens_ -= 1;
  }
  return made;
}

SubFarmController::Retained& SubFarmController::retain(std::uint32_t slot) {
  // The dispatcher hands out a slot once its event is decided (or pushed), when its data went.
  (void)retained_.release(slot);
  return *retained_.hold(slot);
}

void SubFarmController::on_input(Completion& c, std::size_t input) {
  wire::FarmEvent e;
  const auto status = wire::decode(c.message.segments[0].bytes(), c.size, e);
  if (status != wire::PayloadStatus::ok || c.message.segments[0].length < wire::kFarmEventSize) {
    messages_malformed_->add_single_writer();
    spdlog::warn("{}: a malformed event from '{}' dropped: {}", id(), detail::id_of(ids_, c.peer),
                 wire::to_string(status));
    return;
  }
  if (pending_count_ == pending_.size()) {
    fail("'" + detail::id_of(ids_, c.peer) + "' sent more events than its input_window (" +
         std::to_string(input_window_) + ")");
    return;
  }
  Pending& p = pending_[(pending_head_ + pending_count_++) % pending_.size()];
  p.message = std::move(c.message);
  p.event = e;
  p.input = input;
}

// Events from BUs enter the dispatcher as it has room; each taken one is credited to its BU.
bool SubFarmController::disk_behind() const {
  return std::any_of(streams_.begin(), streams_.end(), [](const Stream& st) {
    return st.free.empty() && st.filling != nullptr && st.filling->events.size() >= kBatchEvents;
  });
}

int SubFarmController::admit_inputs(std::int64_t now) {
  int n = 0;
  while (pending_count_ > 0 && dispatcher_->can_admit() && !disk_behind()) {
    Pending& p = pending_[pending_head_];
    pending_head_ = (pending_head_ + 1) % pending_.size();
    --pending_count_;
    ++taken_[p.input];
    credit_due_[p.input] = true;
    ++n;
    if (seen_.seen_before(p.event.event)) {
      events_duplicate_->add_single_writer();
      p.message.clear();
      continue;
    }
    Retained& r = retain(dispatcher_->admit(p.event.event));
    const transport::Segment& first = p.message.segments[0];
    if (first.length > wire::kFarmEventSize) {
      r.data.add(first.buffer.share(), first.offset + wire::kFarmEventSize,
                 first.length - static_cast<std::uint32_t>(wire::kFarmEventSize));
    }
    for (std::uint8_t i = 1; i < p.message.segment_count; ++i) {
      const transport::Segment& seg = p.message.segments[i];
      r.data.add(seg.buffer.share(), seg.offset, seg.length);
    }
    p.message.clear();
    r.size = p.event.size;
    r.flags = p.event.flags;
    r.admitted_ns = now;
  }
  return n;
}

int SubFarmController::send_credits() {
  int n = 0;
  for (std::size_t i = 0; i < inputs_.size(); ++i) {
    if (!credit_due_[i]) continue;
    core::Buffer b = control_pool_->acquire();
    if (!b) break;
    wire::FarmCredit credit;
    credit.taken = taken_[i];
    wire::encode(credit,
                 std::span<std::byte, wire::kFarmCreditSize>(b.data(), wire::kFarmCreditSize));
    transport::Message m;
    m.type = wire::MessageType::farm_credit;
    m.tag = credit.taken;
    m.add(std::move(b), 0, wire::kFarmCreditSize);
    if (endpoint_->post_send(inputs_[i], m) == SendStatus::ok) {
      credit_due_[i] = false;
      ++n;
    }
    m.clear();
  }
  return n;
}

int SubFarmController::dispatch() {
  int sent = 0;
  Dispatch d;
  const bool push = policy_ == Policy::push;
  while (dispatcher_->next(d)) {
    core::Buffer desc = control_pool_->acquire();
    if (!desc) {
      dispatcher_->retract(d);
      break;
    }
    Retained& r = *retained_.find(d.slot);
    wire::FarmEvent e;
    e.event = d.event;
    e.slot = push ? kNoSlot : d.slot;
    e.epoch = d.epoch;
    e.size = r.size;
    e.flags = r.flags;
    wire::encode(e, std::span<std::byte, wire::kFarmEventSize>(desc.data(), wire::kFarmEventSize));
    transport::Message m;
    m.type = wire::MessageType::farm_event;
    m.tag = d.event;
    m.add(std::move(desc), 0, wire::kFarmEventSize);
    for (const transport::Segment& seg : r.data.pieces()) {
      m.add(seg.buffer.share(), seg.offset, seg.length);
    }
    const SendStatus status = endpoint_->post_send(d.peer, m);
    if (status == SendStatus::ok) {
      bytes_out_->add_single_writer(r.size);
      if (push) {
        dispatcher_->pushed(d);
        bytes_decided_ += e.size;
        (void)retained_.release(d.slot);
      }
      ++sent;
      continue;
    }
    m.clear();
    dispatcher_->retract(d);
    if (status == SendStatus::back_pressure || status == SendStatus::not_connected) break;
    if (dispatcher_->lose(d.peer)) {
      on_lost(d.peer, "sending failed: " + std::string(transport::to_string(status)));
    }
  }
  return sent;
}

int SubFarmController::flush_outputs(std::int64_t now, bool all) {
  int work = 0;
  for (Stream& st : streams_) {
    while (output::OutputBatch* b = st.output->poll_done()) {
      if (!st.output->failed()) {
        // What the output's disk cap kept out of this batch is counted before it comes back
        // (and perhaps some of the next one's already: batches are written in order).
        const std::uint64_t dropped = std::min<std::uint64_t>(
            st.output->stats().events_over_cap - st.over_cap, b->events.size());
        st.over_cap += dropped;
        st.written += b->events.size() - dropped;
        events_written_->add_single_writer(b->events.size() - dropped);
        if (dropped > 0) events_not_written_->add_single_writer(dropped);
      }
      b->clear();
      st.free.push_back(b);
      --st.in_output;
      ++work;
    }
    if (st.output->failed()) {
      fail("output of stream '" + (st.name.empty() ? id() : st.name) +
           "' failed: " + st.output->failure());
      return work;
    }
    if (st.filling != nullptr && (all || st.filling->events.size() >= kBatchEvents ||
                                  now - st.filling_since_ns >= kBatchAgeNs)) {
      if (st.output->submit(st.filling)) {
        st.filling = nullptr;
        ++st.in_output;
        ++work;
      }
    }
  }
  return work;
}

void SubFarmController::publish() {
  const Dispatcher& d = *dispatcher_;
  auto bump = [](runtime::Counter* c, std::uint64_t& seen, std::uint64_t now) {
    if (now > seen) c->add_single_writer(now - seen);
    seen = now;
  };
  bump(events_received_, published_.received, d.received());
  bump(events_decided_, published_.decided, d.decided());
  bump(events_accepted_, published_.accepted, d.accepted());
  bump(events_pushed_, published_.pushed, d.pushed_count());
  bump(events_redispatched_, published_.redispatched, d.redispatched());
  bump(answers_late_, published_.late, d.late());
  events_outstanding_->set(static_cast<double>(d.outstanding()));
  events_queued_->set(static_cast<double>(d.queued()));
}

bool SubFarmController::empty() const {
  return pending_count_ == 0 && dispatcher_->queued() == 0 && dispatcher_->outstanding() == 0 &&
         std::all_of(streams_.begin(), streams_.end(),
                     [](const Stream& st) { return st.filling == nullptr && st.in_output == 0; });
}

int SubFarmController::work(std::int64_t now) {
  if (failed()) return 0;
  int work = 0;
  if (!watching_ && producing()) {
    dispatcher_->start_watch(now);
    watching_ = true;
    refilled_ns_ = now;
  }
  dispatcher_->ran(now);
  if (watching_ && now >= next_check_ns_) {
    lost_now_.clear();
    dispatcher_->check(now, lost_now_);
    for (const AppIndex w : lost_now_) {
      on_lost(w,
              "silent for more than " + std::to_string(heartbeat_timeout_ns_ / 1'000'000) + " ms");
    }
    next_check_ns_ = now + std::min(kCheckPeriodNs, heartbeat_timeout_ns_ / 4);
    if (const std::string broken = dispatcher_->check_invariant(); !broken.empty()) {
      fail("accounting broken: " + broken);
    }
  }
  work += generate(now);
  work += admit_inputs(now);
  work += send_credits();
  work += dispatch();
  work += flush_outputs(now, halting());
  publish();
  const std::uint64_t done = dispatcher_->decided() + dispatcher_->pushed_count();
  if (!sampler_.started()) {
    if (done > 0) sampler_.start(now, bytes_decided_, done);
  } else {
    (void)sampler_.tick(now, bytes_decided_, done);
  }
  if (count_ > 0 && next_event_ == count_ && !finished() && empty()) set_finished();
  return work;
}

void SubFarmController::wait_for_work(std::chrono::microseconds timeout) {
  // The generator, the heartbeat check and the output batches need turns without a message.
  std::chrono::microseconds cap{1000};
  if (producing() && inputs_.empty() && dispatcher_->can_admit() &&
      (count_ == 0 || next_event_ < count_)) {
    cap = std::chrono::microseconds(rate_hz_ > 0 ? 200 : 0);
  }
  if (cap.count() == 0) return;
  endpoint_->wait(std::min(timeout, cap));
}

nlohmann::json SubFarmController::results() const {
  if (events_received_ == nullptr) return nlohmann::json::object();
  nlohmann::json workers = nlohmann::json::object();
  for (std::size_t i = 0; i < workers_.size(); ++i) {
    workers[detail::id_of(ids_, workers_[i])] = decided_by_[i].load(std::memory_order_relaxed);
  }
  nlohmann::json r;
  metrics_->counters(r);
  r["policy"] = to_string(policy_);
  r["events_outstanding"] = static_cast<std::uint64_t>(events_outstanding_->value());
  r["events_queued"] = static_cast<std::uint64_t>(events_queued_->value());
  r["workers"] = std::move(workers);
  r["files"] = files_written_.to_json();
  r["latency_us"] = {{"p50", latency_.percentile_us(0.5)},
                     {"p90", latency_.percentile_us(0.9)},
                     {"p99", latency_.percentile_us(0.99)},
                     {"count", latency_.count()}};
  detail::put_rates(r, sampler_, "events_per_s");
  const std::lock_guard lock(lost_mutex_);
  r["lost_workers"] = lost_workers_;
  r["rejoined_workers"] = rejoined_workers_;
  return r;
}

void SubFarmController::fold_results(nlohmann::json& run, const std::string& id,
                                     const nlohmann::json& app) {
  auto count = [](const nlohmann::json& o, const char* key) {
    return o.contains(key) && o[key].is_number() ? o[key].get<std::uint64_t>() : 0;
  };
  for (const char* key : {"events_decided", "events_accepted", "events_pushed", "answers_late",
                          "events_redispatched"}) {
    run[key] = count(run, key) + count(app, key);
  }
  // events_written is the BUs' (taken over, with a farm output): the SFC's files are its own.
  run["farm_events_written"] = count(run, "farm_events_written") + count(app, "events_written");
  run["farm_events_not_written"] =
      count(run, "farm_events_not_written") + count(app, "events_not_written");
  if (!run.contains("sfcs") || !run["sfcs"].is_object()) run["sfcs"] = nlohmann::json::object();
  run["sfcs"][id] = {{"events_per_s", app.value("events_per_s", 0.0)},
                     {"lost_workers", app.value("lost_workers", nlohmann::json::array())}};
}

Result<runtime::Settled> SubFarmController::after_loss(const runtime::LostApp& lost) {
  runtime::ParamReader p(lost.app.params, runtime::application_named(lost.app.id));
  const auto output = p.get<nlohmann::json>("output");
  const auto masks = p.get<std::vector<std::int64_t>>("stream_masks");
  if (auto r = p.status(); !r) return r.error();
  if (!output::keeps_files(output)) return runtime::Settled{};
  std::string dir = output.value("dir", std::string());
  if (dir.empty()) dir = lost.cluster.run.output;
  // As configure() names the streams' files.
  std::vector<std::string> writers;
  if (masks.empty()) {
    writers.push_back(lost.app.id);
  } else {
    for (std::size_t i = 0; i < masks.size(); ++i) {
      writers.push_back(lost.app.id + "_stream" + std::to_string(i));
    }
    writers.push_back(lost.app.id + "_unrouted");
  }
  std::uint64_t on_disk = 0;
  std::uint64_t files = 0;
  std::uint64_t cut = 0;
  std::string unfinished;
  for (const std::string& writer : writers) {
    auto report = output::salvage_bu_files(dir, lost.cluster.run.number, writer, {});
    if (!report) return report.error();
    on_disk += report->events_on_disk;
    files += report->files.size();
    cut += report->bytes_cut;
    for (const std::string& why : report->unfinished) unfinished += "; not finished: " + why;
  }
  runtime::Settled settled;
  settled.report = fmt::format("{}: salvaged {} file(s) in {} ({} bytes cut); {} events on disk{}",
                               lost.app.id, files, dir, cut, on_disk, unfinished);
  settled.results["events_written"] = on_disk;
  return settled;
}

}  // namespace daqflow::apps::farm
