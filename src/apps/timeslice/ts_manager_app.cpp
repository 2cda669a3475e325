#include "ts_manager_app.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "daqflow/core/clock.hpp"
#include "daqflow/wire/evb.hpp"

namespace daqflow::apps::timeslice {

namespace {

constexpr std::int64_t kCheckPeriodNs = 10'000'000;

}  // namespace

Result<void> TsManager::setup(runtime::AppContext& ctx, const TsManagerSettings& s) {
  clock_ = &ctx.clock();
  heartbeat_timeout_ns_ = s.heartbeat_timeout_ms * 1'000'000;
  redial_ns_ = s.redial_ms * 1'000'000;
  if (auto r = take_peers(ctx, s); !r) return r;
  TsAssigner::Settings settings;
  settings.window = s.window;
  settings.builder_window = s.builder_window;
  settings.builders = builder_ids_;
  settings.heartbeat_timeout_ns = heartbeat_timeout_ns_;
  // A timeslice takes a receive buffer per input at its builder.
  settings.min_free = static_cast<std::uint32_t>(inputs_.size());
  for (const AppIndex i : inputs_) {
    const auto count = ctx.cluster().applications[i].params.value("count", std::uint64_t{0});
    if (count > 0) settings.limit = std::min(settings.limit, count);
  }
  assigner_ = TsAssigner(std::move(settings));
  cast_.reset();
  if (!s.multicast.group.empty()) {
    auto group = mcast::group_of(s.multicast);
    if (!group) return runtime::param_error("multicast", group.error().message());
    auto cast = AssignCaster::open(*group, s.multicast.history);
    if (!cast) return cast.error().context("multicast");
    cast_.emplace(std::move(*cast));
  }
  if (auto r = open_endpoint(ctx, s.window); !r) return r;
  add_metrics(ctx.metrics());
  reset_run(s.window);
  add_handlers();
  return ok();
}

Result<void> TsManager::take_peers(runtime::AppContext& ctx, const TsManagerSettings& s) {
  auto b = ctx.indexes_of("builders", s.builders);
  if (!b) return b.error();
  builder_ids_ = *b;
  auto in = ctx.indexes_of("inputs", s.inputs);
  if (!in) return in.error();
  inputs_ = *in;
  ids_ = detail::application_ids(ctx.cluster());
  for (std::size_t i = 0; i < builder_ids_.size(); ++i) {
    const auto& app = ctx.cluster().applications[builder_ids_[i]];
    if (app.type != "ts_builder" || app.params.value("manager", std::string()) != id()) {
      return runtime::param_error("builders",
                                  "'" + s.builders[i] + "' is no ts_builder with manager: " + id());
    }
  }
  for (std::size_t i = 0; i < inputs_.size(); ++i) {
    const auto& app = ctx.cluster().applications[inputs_[i]];
    if (app.type != "ts_input" || app.params.value("manager", std::string()) != id()) {
      return runtime::param_error("inputs",
                                  "'" + s.inputs[i] + "' is no ts_input with manager: " + id());
    }
  }
  return ok();
}

Result<void> TsManager::open_endpoint(runtime::AppContext& ctx, std::uint32_t window) {
  transport::EndpointOptions options = ctx.endpoint_options();
  options.max_message_size = 4096;
  options.recv_buffers = std::max<std::uint32_t>(
      options.recv_buffers, static_cast<std::uint32_t>(builder_ids_.size() * (window + 8)));
  auto endpoint =
      detail::open_endpoint(ctx, {{"builder", builder_ids_}, {"input", inputs_}}, &options);
  if (!endpoint) return endpoint.error();
  endpoint_ = *endpoint;
  // Every assignment goes to every input; a timeslice is assigned again at most once per builder
  // lost, and the window bounds the rest.
  if (auto r = assigns_.configure(id() + ".assigns", inputs_,
                                  (builder_ids_.size() + 1) * std::size_t{window} + 16);
      !r) {
    return r;
  }
  // A builder asks about each timeslice it built once: the window bounds the answers it waits
  // for, and fences come one per loss or report under an old epoch.
  return replies_.configure(id() + ".replies", builder_ids_,
                            builder_ids_.size() * (std::size_t{window} + 16) + 16);
}

void TsManager::add_metrics(runtime::MetricsRegistry& m) {
  metrics_ = &m;
  assigned_ = &m.counter("timeslices_assigned", "timeslices given to a builder (first time)");
  reassigned_ = &m.counter("timeslices_reassigned", "timeslices given again after a loss");
  committed_ = &m.counter("commits_granted", "timeslices a builder was allowed to write");
  denied_ = &m.counter("commits_denied", "commit requests refused (fenced or reassigned)");
  granted_again_ = &m.counter("commits_granted_again",
                              "commit requests asked again after a link failed, granted again");
  done_ = &m.counter("timeslices_done", "timeslices written");
  salvaged_written_ =
      &m.counter("timeslices_salvaged", "timeslices found written in a lost builder's files");
  messages_malformed_ = &m.counter("messages_malformed", "malformed messages dropped");
  in_flight_ = &m.gauge("timeslices_in_flight", "timeslices assigned, not written");
  builders_alive_ = &m.gauge("builders_alive", "builders not lost");
  builders_alive_->set(static_cast<double>(builder_ids_.size()));
}

void TsManager::reset_run(std::uint32_t window) {
  again_.clear();
  again_.reserve(std::size_t{window});
  gone_.clear();
  gone_.reserve(inputs_.size());
  lost_now_.clear();
  lost_now_.reserve(builder_ids_.size());
  watching_ = false;
  end_sent_ = false;
  end_heard_.assign(inputs_.size(), false);
  next_check_ns_ = 0;
  acks_due_.clear();
  acks_due_.reserve(2 * builder_ids_.size() * std::size_t{window});
  recent_done_.assign(builder_ids_.size(), std::vector<std::uint64_t>(std::max(window, 1u)));
  done_by_builder_.assign(builder_ids_.size(), 0);
  salvage_acked_.clear();
  input_links_.assign(inputs_.size(), InputLink{});
  any_input_down_ = false;
  const std::lock_guard lock(mutex_);
  cast_stats_ = {};
  lost_builders_.clear();
  rejoined_builders_.clear();
  salvaged_.clear();
  in_doubt_.assign(builder_ids_.size(), {});
  lost_flags_.assign(builder_ids_.size(), false);
}

void TsManager::add_handlers() {
  runtime::DataPath& path = data_path();
  path.count_rejected_in(*messages_malformed_);
  path.on(wire::MessageType::ts_report,
          from_builder([this](std::size_t from, Completion& c, std::int64_t now) {
            on_report(from, c, now);
          }));
  path.on(wire::MessageType::ts_commit, from_builder([this](std::size_t from, Completion& c,
                                                            std::int64_t) { on_commit(from, c); }));
  path.on(wire::MessageType::ts_done, from_builder([this](std::size_t from, Completion& c,
                                                          std::int64_t) { on_done(from, c); }));
  path.on(wire::MessageType::ts_assign, [this](Completion& c, std::int64_t) { on_end_heard(c); });
  path.on_peer_gone([this](AppIndex peer, std::string_view reason, bool) {
    if (const auto in = std::find(inputs_.begin(), inputs_.end(), peer); in != inputs_.end()) {
      const auto i = static_cast<std::size_t>(in - inputs_.begin());
      if (!reason.empty() && !winding_down() && input_link_failed(i, reason)) return;
      // An input gone needs nothing more from this manager (its loss is the run's affair).
      input_links_[i] = InputLink{};
      if (cast_) end_heard_[i] = true;
      return;
    }
    const auto gone = builder_of(peer);
    if (!gone) return;
    if (!reason.empty()) {
      lose(*gone, "connection failed: " + std::string(reason));
    } else if (!winding_down()) {
      lose(*gone, "closed its connection");
    }
  });
  path.on_work([this](std::int64_t now) { return work(now); });
  path.drained_when([this] {
    return end_sent_ && (!cast_ || (cast_->idle() && ends_heard())) && acks_due_.empty() &&
           assigns_.idle() && assigner_.empty() &&
           std::none_of(input_links_.begin(), input_links_.end(), [](const InputLink& l) {
             return l.down_ns != 0 || l.end || l.at < l.again.size();
           });
  });
}

std::optional<std::size_t> TsManager::builder_of(AppIndex peer) const {
  const auto it = std::find(builder_ids_.begin(), builder_ids_.end(), peer);
  if (it == builder_ids_.end()) return std::nullopt;
  return static_cast<std::size_t>(it - builder_ids_.begin());
}

template <typename Handle>
runtime::DataPath::OnMessage TsManager::from_builder(Handle handle) {
  return [this, handle](Completion& c, std::int64_t now) {
    const auto b = builder_of(c.peer);
    if (!b || c.message.segment_count != 1) {
      data_path().reject();
      return;
    }
    // Heard from: a builder whose connection closed (a process started again) gets answers again.
    replies_.revive(c.peer);
    handle(*b, c, now);
  };
}

void TsManager::release() {
  assigns_.clear();
  replies_.clear();
  endpoint_ = nullptr;
}

void TsManager::publish_doubt(std::optional<std::size_t> lost) {
  std::vector<std::vector<std::uint64_t>> doubt(builder_ids_.size());
  for (std::size_t b = 0; b < doubt.size(); ++b) doubt[b] = assigner_.in_doubt(b);
  const std::lock_guard lock(mutex_);
  in_doubt_ = std::move(doubt);
  if (lost) lost_flags_[*lost] = true;
}

void TsManager::push_assign(const wire::TsAssign& a) {
  if (cast_) {
    cast_->push(a);
    return;
  }
  std::array<std::byte, wire::kTsAssignSize> bytes{};
  wire::encode(a, bytes);
  if (!assigns_.push(wire::MessageType::ts_assign, a.index, bytes)) {
    fail("the log of assignments to the inputs is full (timeslice " + std::to_string(a.index) +
         ")");
  }
}

// Through the inputs' log, in order and none dropped on back-pressure: an input that missed one
// would keep its timeslice for good and never drain. Before any new assignment takes the room.
void TsManager::push_salvage_acks() {
  std::size_t n = 0;
  for (; n < acks_due_.size() && assigns_.has_room(); ++n) {
    const std::uint64_t k = acks_due_[n];
    std::array<std::byte, wire::kTsAckSize> bytes{};
    wire::encode(wire::TsAck{k, wire::TsAckStatus::complete, 0}, bytes);
    (void)assigns_.push(wire::MessageType::ts_ack, k, bytes);  // has room: cannot fail
    salvage_acked_.push_back(k);
  }
  acks_due_.erase(acks_due_.begin(), acks_due_.begin() + static_cast<std::ptrdiff_t>(n));
}

bool TsManager::input_link_failed(std::size_t input, std::string_view why) {
  InputLink& link = input_links_[input];
  const std::string name = detail::id_of(ids_, inputs_[input]);
  if (link.down_ns != 0) return false;  // dialing it again failed
  if (auto r = endpoint_->connect(inputs_[input]); !r) return false;
  assigns_.drop(inputs_[input]);
  link = InputLink{};
  link.down_ns = std::max<std::int64_t>(1, clock_->now_ns());
  any_input_down_ = true;
  spdlog::warn("{}: the link to input '{}' failed ({}); dialing it again for up to {} ms", id(),
               name, why, redial_ns_ / 1'000'000);
  return true;
}

void TsManager::check_input_links(std::int64_t now) {
  any_input_down_ = false;
  for (std::size_t i = 0; i < inputs_.size(); ++i) {
    InputLink& link = input_links_[i];
    if (link.down_ns == 0) continue;
    const std::string name = detail::id_of(ids_, inputs_[i]);
    if (endpoint_->connected(inputs_[i])) {
      // What went on the old link may be gone: every open assignment goes again (an input takes
      // one it has as it is), and the run's end if it was said.
      link.down_ns = 0;
      assigns_.revive(inputs_[i]);
      if (!cast_) assigner_.open_assignments(link.again);
      link.acks = salvage_acked_.size();
      link.end = end_sent_ && !cast_;
      spdlog::warn(
          "{}: the link to input '{}' is back; {} assignment(s) and {} salvage "
          "acknowledgement(s) go to it again",
          id(), name, link.again.size(), link.acks);
    } else if (now - link.down_ns > redial_ns_) {
      link = InputLink{};
      if (cast_) end_heard_[i] = true;
      spdlog::warn("{}: input '{}' lost: its link is not back after {} ms", id(), name,
                   redial_ns_ / 1'000'000);
    } else {
      any_input_down_ = true;
    }
  }
}

void TsManager::push_resyncs() {
  for (std::size_t i = 0; i < input_links_.size(); ++i) {
    InputLink& link = input_links_[i];
    if (link.down_ns != 0) continue;
    const auto tell = [&](const wire::TsAssign& a) {
      std::array<std::byte, wire::kTsAssignSize> bytes{};
      wire::encode(a, bytes);
      return assigns_.has_room() &&
             assigns_.push(wire::MessageType::ts_assign, a.index, bytes, static_cast<int>(i));
    };
    for (; link.at < link.again.size(); ++link.at) {
      const TsAssigner::Assignment& a = link.again[link.at];
      if (!tell({a.index, builder_ids_[a.builder], a.epoch})) return;
    }
    link.again.clear();
    link.at = 0;
    // An acknowledgement the input had already is an answer to a resend there: it ignores it.
    for (; link.acks_at < link.acks; ++link.acks_at) {
      const std::uint64_t k = salvage_acked_[link.acks_at];
      std::array<std::byte, wire::kTsAckSize> bytes{};
      wire::encode(wire::TsAck{k, wire::TsAckStatus::complete, 0}, bytes);
      // Half the log stays for what the run needs meanwhile (reassignments, the end): a full
      // log fails the run.
      if (assigns_.room() <= assigns_.capacity() / 2 || !assigns_.has_room() ||
          !assigns_.push(wire::MessageType::ts_ack, k, bytes, static_cast<int>(i)))
        return;
    }
    link.acks = 0;
    link.acks_at = 0;
    if (link.end) {
      if (!tell({assigner_.next(), wire::kNoApplication, 0})) return;
      link.end = false;
    }
  }
}

// An input gone needs nothing more (its loss is the run's affair).
void TsManager::tell_again() {
  for (const TsAssigner::Assignment& a : again_) {
    push_assign({a.index, builder_ids_[a.builder], a.epoch});
    reassigned_->add_single_writer();
  }
  again_.clear();
  // An input still to be told its assignments again is told them as they are now, after these.
  for (InputLink& link : input_links_) {
    if (link.at >= link.again.size()) continue;
    link.again.clear();
    link.at = 0;
    assigner_.open_assignments(link.again);
  }
}

int TsManager::flush_assignments() {
  gone_.clear();
  int n = assigns_.post(*endpoint_, gone_);
  if (cast_) {
    const int cast = cast_->pump(core::monotonic_ns());
    if (cast > 0) {
      const std::lock_guard lock(mutex_);
      cast_stats_ = cast_->stats();
    }
    n += cast;
  }
  return n;
}

bool TsManager::ends_heard() const {
  return !cast_ || std::all_of(end_heard_.begin(), end_heard_.end(), [](bool b) { return b; });
}

void TsManager::on_end_heard(const Completion& c) {
  const auto it = std::find(inputs_.begin(), inputs_.end(), c.peer);
  wire::TsAssign a;
  if (!cast_ || it == inputs_.end() || c.message.segment_count != 1 ||
      wire::decode(c.message.segments[0].bytes(), a) != wire::PayloadStatus::ok ||
      a.builder != wire::kNoApplication || !end_sent_ || a.index != assigner_.next()) {
    data_path().reject();
    return;
  }
  end_heard_[static_cast<std::size_t>(it - inputs_.begin())] = true;
}

void TsManager::fence(std::size_t b) {
  wire::Fence f;
  f.bu = builder_ids_[b];
  f.epoch = assigner_.epoch(b);
  std::array<std::byte, wire::kFenceSize> bytes{};
  wire::encode(f, bytes);
  reply(b, wire::MessageType::fence, f.epoch, bytes);
}

// In order, none dropped while the builder's pipeline is full: a commit answer lost would keep
// its timeslice open here for good (the builder does not ask twice), and the inputs' data with it.
void TsManager::reply(std::size_t b, wire::MessageType type, std::uint64_t tag,
                      std::span<const std::byte> bytes) {
  if (!replies_.push(type, tag, bytes, static_cast<int>(b))) {
    fail("the log of answers to the builders is full (to '" + detail::id_of(ids_, builder_ids_[b]) +
         "')");
  }
}

void TsManager::lose(std::size_t b, const std::string& why) {
  if (const auto loss = assigner_.lose(b, again_)) on_lost(b, why, *loss);
}

void TsManager::on_lost(std::size_t b, const std::string& why, const TsAssigner::Loss& loss) {
  const std::string name = detail::id_of(ids_, builder_ids_[b]);
  tell_again();
  {
    const std::lock_guard lock(mutex_);
    lost_builders_.push_back(name);
  }
  publish_doubt(b);
  builders_alive_->set(static_cast<double>(assigner_.alive_count()));
  // What it wrote last: its acknowledgements to the inputs may have died with it (an input that
  // has them already ignores these).
  const std::vector<std::uint64_t>& recent = recent_done_[b];
  const std::uint64_t written = done_by_builder_[b];
  const std::uint64_t acked = std::min<std::uint64_t>(written, recent.size());
  for (std::uint64_t k = written - acked; k < written; ++k)
    acks_due_.push_back(recent[k % recent.size()]);
  spdlog::warn(
      "{}: builder '{}' lost ({}); {} timeslice(s) assigned again, {} in doubt, the last {} it "
      "wrote acknowledged to the inputs",
      id(), name, why, loss.again, loss.in_doubt, acked);
  fence(b);
  if (assigner_.alive_count() == 0 && !winding_down()) {
    fail("every builder is lost (the last: '" + name + "', " + why + ")");
  }
}

void TsManager::on_report(std::size_t b, const Completion& c, std::int64_t now) {
  wire::TsReport r;
  if (wire::decode(c.message.segments[0].bytes(), r) != wire::PayloadStatus::ok) {
    data_path().reject();
    return;
  }
  switch (assigner_.report(b, r.epoch, r.free_buffers, now)) {
    case TsAssigner::Report::accepted:
    case TsAssigner::Report::ignored:
      break;
    case TsAssigner::Report::rejoined: {
      const std::string name = detail::id_of(ids_, builder_ids_[b]);
      {
        const std::lock_guard lock(mutex_);
        rejoined_builders_.push_back(name);
        lost_flags_[b] = false;
      }
      publish_doubt();
      builders_alive_->set(static_cast<double>(assigner_.alive_count()));
      spdlog::warn("{}: builder '{}' rejoined under epoch {}", id(), name, r.epoch);
      break;
    }
    case TsAssigner::Report::fence_again:
      fence(b);  // still under its old epoch: tell it again
      break;
  }
}

void TsManager::on_commit(std::size_t b, const Completion& c) {
  wire::TsCommit q;
  if (wire::decode(c.message.segments[0].bytes(), q) != wire::PayloadStatus::ok ||
      q.answer != wire::CommitAnswer::ask) {
    data_path().reject();
    return;
  }
  const TsAssigner::Commit outcome = assigner_.commit(b, q.index, q.epoch);
  const bool granted = outcome != TsAssigner::Commit::denied;
  (outcome == TsAssigner::Commit::granted         ? committed_
   : outcome == TsAssigner::Commit::granted_again ? granted_again_
                                                  : denied_)
      ->add_single_writer();
  wire::TsCommit a = q;
  a.answer = granted ? wire::CommitAnswer::granted : wire::CommitAnswer::denied;
  std::array<std::byte, wire::kTsCommitSize> bytes{};
  wire::encode(a, bytes);
  reply(b, wire::MessageType::ts_commit, q.index, bytes);
}

// Done counts from the builder it was granted to, whatever its epoch now: a fenced builder still
// writes what it was allowed to.
void TsManager::on_done(std::size_t b, const Completion& c) {
  wire::TsDone d;
  if (wire::decode(c.message.segments[0].bytes(), d) != wire::PayloadStatus::ok) {
    data_path().reject();
    return;
  }
  if (!assigner_.done(b, d.index)) return;
  done_->add_single_writer();
  std::vector<std::uint64_t>& recent = recent_done_[b];
  recent[done_by_builder_[b]++ % recent.size()] = d.index;
  if (!assigner_.alive(b)) publish_doubt();  // one of its timeslices in doubt is settled
}

void TsManager::apply_salvage() {
  std::vector<Salvaged> work;
  {
    const std::lock_guard lock(mutex_);
    if (salvaged_.empty()) return;
    work.swap(salvaged_);
  }
  for (const Salvaged& s : work) {
    std::vector<std::uint64_t> on_disk;
    const TsAssigner::Salvage outcome = assigner_.salvaged(s.builder, s.written, again_, on_disk);
    done_->add_single_writer(on_disk.size());
    salvaged_written_->add_single_writer(on_disk.size());
    // On disk: done, and the inputs may drop them.
    acks_due_.insert(acks_due_.end(), on_disk.begin(), on_disk.end());
    tell_again();
    publish_doubt();
    spdlog::warn("{}: builder '{}' salvaged: {} timeslice(s) on its disk, {} built again", id(),
                 detail::id_of(ids_, builder_ids_[s.builder]), outcome.written, outcome.again);
  }
}

int TsManager::work(std::int64_t now) {
  int work = 0;
  if (failed()) return work;
  apply_salvage();
  if (any_input_down_) check_input_links(now);
  push_resyncs();
  push_salvage_acks();
  if (!watching_ && producing()) {
    assigner_.start_watch(now);
    watching_ = true;
  }
  assigner_.ran(now);
  if (watching_ && now >= next_check_ns_) {
    lost_now_.clear();
    assigner_.check(now, lost_now_);
    for (const std::size_t b : lost_now_) {
      const TsAssigner::Loss loss = assigner_.lose_silent(b, again_);
      on_lost(b,
              "silent for more than " + std::to_string(heartbeat_timeout_ns_ / 1'000'000) + " ms",
              loss);
    }
    next_check_ns_ = now + std::min(kCheckPeriodNs, heartbeat_timeout_ns_ / 4);
  }
  // Assign ahead while the window and the builders have room; only while producing (a halted run
  // assigns nothing new, but finishes what it has).
  while (producing() && assigns_have_room()) {
    const auto a = assigner_.assign_next();
    if (!a) break;
    push_assign({a->index, builder_ids_[a->builder], a->epoch});
    assigned_->add_single_writer();
    ++work;
  }
  if (halting() && !end_sent_) {
    // The run ends before the next timeslice: the inputs make every timeslice up to it (they are
    // halted after this manager) and drop what they made beyond.
    push_assign({assigner_.next(), wire::kNoApplication, 0});
    end_sent_ = true;
    spdlog::info("{}: the run ends before timeslice {}", id(), assigner_.next());
  }
  work += flush_assignments();
  gone_.clear();
  work += replies_.post(*endpoint_, gone_);  // a builder gone is lost through its completion
  in_flight_->set(static_cast<double>(assigner_.in_flight()));
  return work;
}

void TsManager::wait_for_work(std::chrono::microseconds timeout) {
  endpoint_->wait(std::min(timeout, std::chrono::microseconds(2000)));
}

nlohmann::json TsManager::results() const {
  if (assigned_ == nullptr) return nlohmann::json::object();
  nlohmann::json r;
  metrics_->counters(r);
  r["timeslices_in_flight"] = static_cast<std::uint64_t>(in_flight_->value());
  const std::lock_guard lock(mutex_);
  r["lost_builders"] = lost_builders_;
  r["rejoined_builders"] = rejoined_builders_;
  std::uint64_t doubt = 0;
  for (const auto& d : in_doubt_) doubt += d.size();
  r["timeslices_in_doubt"] = doubt;
  if (cast_) r["multicast"] = cast_stats_;
  return r;
}

Result<nlohmann::json> TsManager::action(std::string_view name, const nlohmann::json& args) {
  auto position = [&](const nlohmann::json& a) -> Result<std::size_t> {
    const std::string builder = a.value("builder", std::string());
    for (std::size_t b = 0; b < builder_ids_.size(); ++b) {
      if (detail::id_of(ids_, builder_ids_[b]) == builder) return b;
    }
    return Error(ErrorCode::not_found, "no builder '" + builder + "' of manager '" + id() + "'");
  };
  if (name == "in_doubt") {
    // The timeslices a lost builder was allowed to write and did not report written; `lost` is
    // false while the manager has not declared it lost yet.
    auto b = position(args);
    if (!b) return b.error();
    const std::lock_guard lock(mutex_);
    return nlohmann::json{{"lost", lost_flags_[*b]}, {"timeslices", in_doubt_[*b]}};
  }
  if (name == "salvaged") {
    auto b = position(args);
    if (!b) return b.error();
    Salvaged s;
    s.builder = *b;
    for (const auto& k : args.value("written", nlohmann::json::array())) {
      if (!k.is_number_unsigned()) return Error("salvaged: 'written' lists timeslice numbers");
      s.written.push_back(k.get<std::uint64_t>());
    }
    const std::lock_guard lock(mutex_);
    salvaged_.push_back(std::move(s));
    return nlohmann::json{{"accepted", true}};
  }
  return Application::action(name, args);
}

}  // namespace daqflow::apps::timeslice
