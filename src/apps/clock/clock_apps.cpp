#include "clock_apps.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "daqflow/core/synced_clock.hpp"
#include "daqflow/wire/clock.hpp"
#include "daqflow/wire/endian.hpp"

namespace daqflow::apps::clock {

// A node's estimate in the master's results (the correction is the node's own business).
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(ClockEstimate, offset_ns, drift_ppm, drift_precision_ppm,
                                   precision_ns, min_delay_ns, max_delay_ns, rounds)

namespace {

constexpr std::size_t kBufferSize = 64;
// Multicast corrections: a NACK every 5 ms for a missing one, 50 at most.
constexpr std::int64_t kNackIntervalNs = 5'000'000;
constexpr std::uint32_t kMaxNacks = 50;

// A due time already past: the agent does not sleep.
constexpr std::int64_t kNow = 1;
// How long the agent sleeps at most otherwise.
constexpr std::int64_t kNapNs = 1'000'000;

}  // namespace

Result<void> ClockMaster::setup(runtime::AppContext& ctx, const ClockMasterSettings& s) {
  interval_ns_ = s.interval_ms * 1'000'000;
  probes_ = s.probes;
  window_ = s.window;
  mcast_.reset();
  if (!s.multicast.group.empty()) {
    auto group = mcast::group_of(s.multicast);
    if (!group) return runtime::param_error("multicast", group.error().message());
    auto sender = mcast::Sender::open(*group, s.multicast.history);
    if (!sender) return sender.error().context("multicast");
    mcast_.emplace(std::move(*sender));
  }
  if (auto r = open_endpoint(ctx, s.nodes); !r) return r;
  nodes_state_.clear();
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    Node& n = nodes_state_.emplace_back();
    n.estimator = ClockEstimator(s.window);
  }
  round_ = 0;
  step_ = 0;
  next_round_ns_ = 0;
  add_metrics(ctx.metrics());
  add_handlers();
  return ok();
}

Result<void> ClockMaster::open_endpoint(runtime::AppContext& ctx,
                                        const std::vector<std::string>& names) {
  auto indexes = ctx.indexes_of("nodes", names);
  if (!indexes) return indexes.error();
  nodes_ = *indexes;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    const auto& app = ctx.cluster().applications[nodes_[i]];
    if (app.type != "clock_client" || app.params.value("master", std::string()) != id()) {
      return runtime::param_error("nodes",
                                  "'" + names[i] + "' is no clock_client with master: " + id());
    }
  }
  ids_ = detail::application_ids(ctx.cluster());
  transport::EndpointOptions options = ctx.endpoint_options();
  options.max_message_size = 4096;
  auto endpoint = detail::open_endpoint(ctx, {{"node", nodes_}}, &options);
  if (!endpoint) return endpoint.error();
  endpoint_ = *endpoint;
  auto pool = data_path().send_pool(id() + ".probes", kBufferSize, 4 * nodes_.size() + 16);
  if (!pool) return pool.error();
  pool_ = *pool;
  return ok();
}

void ClockMaster::add_metrics(runtime::MetricsRegistry& m) {
  worst_precision_ =
      &m.gauge("clock_precision_ns", "the worst node's estimated clock precision, ns");
  rounds_ = &m.counter("clock_rounds", "rounds of round trips done (all nodes)");
  messages_malformed_ = &m.counter("messages_malformed", "malformed messages dropped");
  corrections_unicast_ = &m.counter("corrections_unicast",
                                    "multicast: corrections sent over the transport (socket full)");
  {
    const std::lock_guard lock(mutex_);
    published_.assign(nodes_.size(), ClockEstimate{});
    mcast_stats_ = {};
  }
}

void ClockMaster::add_handlers() {
  runtime::DataPath& path = data_path();
  path.count_rejected_in(*messages_malformed_);
  path.on(wire::MessageType::clock_reply, [this](Completion& c, std::int64_t now) {
    on_reply(c, core::synced_clock().local_ns(), now);
  });
  path.on_peer_gone([this](AppIndex peer, std::string_view reason, bool) {
    if (!winding_down()) {
      spdlog::warn("{}: node '{}' gone: {}", id(), detail::id_of(ids_, peer),
                   reason.empty() ? "closed" : reason);
    }
  });
  path.on_work([this](std::int64_t now) { return work(now); });
  // Replies are awaited by polling (a round trip must not include a wake-up's latency), and the
  // next round starts on time.
  path.at([this] {
    const bool waiting = std::any_of(nodes_state_.begin(), nodes_state_.end(),
                                     [](const Node& s) { return s.waiting; });
    return waiting ? kNow : next_round_ns_;
  });
}

void ClockMaster::release() {
  endpoint_ = nullptr;
  pool_ = nullptr;
}

bool ClockMaster::send(AppIndex peer, wire::MessageType type, std::span<const std::byte> bytes) {
  return data_path().send_copy(*pool_, peer, type, 0, bytes) == SendStatus::ok;
}

void ClockMaster::send_correction(std::size_t n, std::span<const std::byte> bytes) {
  if (mcast_) {
    // The datagram names its node (application index); every node reads every correction.
    std::array<std::byte, 8 + wire::kClockCorrectionSize> datagram{};
    wire::store_le32(datagram.data(), nodes_[n]);
    std::copy(bytes.begin(), bytes.end(), datagram.begin() + 8);
    if (mcast_->send(datagram)) return;
    corrections_unicast_->add_single_writer();
  }
  (void)send(nodes_[n], wire::MessageType::clock_correction, bytes);
}

void ClockMaster::send_probe(std::size_t n, std::int64_t now) {
  Node& s = nodes_state_[n];
  wire::ClockProbe p{round_, s.probe, 0};
  // The send time is taken as late as can be: the message leaves in the poll() right after.
  p.t1 = core::synced_clock().local_ns();
  std::array<std::byte, wire::kClockProbeSize> bytes{};
  wire::encode(p, bytes);
  if (!send(nodes_[n], wire::MessageType::clock_probe, bytes)) return;
  s.waiting = true;
  s.sent_ns = now;
  data_path().flush();
}

bool ClockMaster::step_waiting(std::int64_t now) const {
  const Node& s = nodes_state_[step_ % nodes_.size()];
  return s.waiting && now - s.sent_ns > 1'000'000;
}

void ClockMaster::next_step(std::int64_t now) {
  // Probes go one at a time, to the nodes in turn (probe 0 of every node, then probe 1...):
  // round trips to two nodes at once would delay each other, and each node sees the same
  // conditions.
  ++step_;
  if (step_ >= total_steps()) {
    finish_all();
    return;
  }
  Node& s = nodes_state_[step_ % nodes_.size()];
  s.probe = static_cast<std::uint32_t>(step_ / nodes_.size());
  send_probe(step_ % nodes_.size(), now);
}

void ClockMaster::finish_all() {
  for (std::size_t n = 0; n < nodes_.size(); ++n) finish_round(n);
  step_ = total_steps();
}

void ClockMaster::finish_round(std::size_t n) {
  Node& s = nodes_state_[n];
  if (s.has_best) {
    s.estimator.add_round(s.best);
    {
      const std::lock_guard lock(mutex_);
      s.window.push_back({round_, s.best_probe, s.best.delay_ns()});
      while (s.window.size() > window_) s.window.pop_front();
    }
    ++s.rounds;
    rounds_->add_single_writer();
    if (const auto e = s.estimator.estimate()) {
      wire::ClockCorrectionMsg c;
      c.round = s.rounds;
      c.shift_ns = e->correction.shift_ns;
      c.scale = e->correction.scale;
      c.precision_ns = e->precision_ns;
      c.drift_ppm = e->drift_ppm;
      std::array<std::byte, wire::kClockCorrectionSize> bytes{};
      wire::encode(c, bytes);
      send_correction(n, bytes);
      const std::lock_guard lock(mutex_);
      published_[n] = *e;
      if (mcast_) mcast_stats_ = mcast_->stats();
      double worst = 0;
      for (const auto& p : published_) worst = std::max(worst, p.precision_ns);
      worst_precision_->set(worst);
    }
  }
  s.has_best = false;
  s.waiting = false;
}

// t4: the reply's arrival, read first thing.
void ClockMaster::on_reply(Completion& c, std::int64_t t4, std::int64_t now) {
  const auto it = std::find(nodes_.begin(), nodes_.end(), c.peer);
  wire::ClockReply r;
  if (it == nodes_.end() || c.message.segment_count != 1 ||
      wire::decode(c.message.segments[0].bytes(), r) != wire::PayloadStatus::ok) {
    data_path().reject();
    return;
  }
  Node& s = nodes_state_[static_cast<std::size_t>(it - nodes_.begin())];
  if (r.round != round_ || !s.waiting || r.probe != s.probe) return;
  const RoundTrip trip{r.t1, r.t2, r.t3, t4};
  if (trip.delay_ns() >= 0 && (!s.has_best || trip.delay_ns() < s.best.delay_ns())) {
    s.best = trip;
    s.best_probe = r.probe;
    s.has_best = true;
  }
  ++s.replies;
  s.waiting = false;
  next_step(now);
}

int ClockMaster::work(std::int64_t now) {
  int work = 0;
  if (mcast_) {
    // NACKs answered with repairs, and the heartbeat that shows the nodes the last correction.
    if (const int n = mcast_->pump(now); n > 0) {
      work += n;
      const std::lock_guard lock(mutex_);
      mcast_stats_ = mcast_->stats();
    }
  }
  if (!producing() && !halting()) return work;
  // A node that does not answer within a millisecond loses that probe: the next step goes.
  if (step_ < total_steps() && step_waiting(now)) {
    nodes_state_[step_ % nodes_.size()].waiting = false;
    next_step(now);
  }
  if (now >= next_round_ns_ && !nodes_.empty()) {
    if (step_ < total_steps()) finish_all();  // the last round's stragglers are lost
    ++round_;
    step_ = 0;
    for (Node& s : nodes_state_) s.probe = 0;
    send_probe(0, now);
    next_round_ns_ = now + interval_ns_;
    ++work;
  }
  return work;
}

nlohmann::json ClockMaster::results() const {
  if (rounds_ == nullptr) return nlohmann::json::object();
  nlohmann::json nodes = nlohmann::json::object();
  const std::lock_guard lock(mutex_);
  double worst = 0;
  for (std::size_t n = 0; n < nodes_.size() && n < published_.size(); ++n) {
    const ClockEstimate& e = published_[n];
    nodes[detail::id_of(ids_, nodes_[n])] = e;
    worst = std::max(worst, e.precision_ns);
  }
  nlohmann::json r = {
      {"nodes", nodes}, {"clock_precision_ns", worst}, {"rounds", rounds_->value()}};
  if (mcast_) {
    r["multicast"] = mcast_stats_;
    r["multicast"]["corrections_unicast"] = corrections_unicast_->value();
  }
  return r;
}

Result<nlohmann::json> ClockMaster::action(std::string_view name, const nlohmann::json& args) {
  if (name != "trips") return runtime::Application::action(name, args);
  nlohmann::json nodes = nlohmann::json::object();
  const std::lock_guard lock(mutex_);
  for (std::size_t n = 0; n < nodes_.size() && n < nodes_state_.size(); ++n) {
    nlohmann::json trips = nlohmann::json::array();
    for (const Trip& t : nodes_state_[n].window) trips.push_back({t.round, t.probe, t.delay_ns});
    nodes[detail::id_of(ids_, nodes_[n])] = std::move(trips);
  }
  return nlohmann::json{{"fields", {"round", "probe", "delay_ns"}}, {"nodes", std::move(nodes)}};
}

Result<void> ClockClient::setup(runtime::AppContext& ctx, const ClockClientSettings& s) {
  auto m = ctx.index_of(s.master);
  if (!m) return runtime::param_error("master", m.error().message());
  master_ = *m;
  self_ = ctx.self().index;
  // The group is the master's: one place in the configuration for all nodes.
  mcast_.reset();
  const mcast::Group group = mcast::group_of(
      ctx.cluster().applications[master_].params.value("multicast", nlohmann::json::object()));
  if (!group.address.empty()) {
    auto receiver =
        mcast::Receiver::open(group, s.multicast_drop, self_ + 1, kNackIntervalNs, kMaxNacks);
    if (!receiver) return receiver.error().context("multicast");
    mcast_.emplace(std::move(*receiver));
  }
  if (s.inject_offset_us != 0 || s.inject_drift_ppm != 0) {
    core::synced_clock().inject(std::llround(s.inject_offset_us * 1000), s.inject_drift_ppm);
    spdlog::info("{}: this process's local clock runs {} us ahead, {} ppm fast (injected)", id(),
                 s.inject_offset_us, s.inject_drift_ppm);
  }
  transport::EndpointOptions options = ctx.endpoint_options();
  options.max_message_size = 4096;
  auto endpoint = detail::open_endpoint(ctx, {{"master", {&master_, 1}}}, &options);
  if (!endpoint) return endpoint.error();
  endpoint_ = *endpoint;
  auto pool = data_path().send_pool(id() + ".replies", kBufferSize, 32);
  if (!pool) return pool.error();
  pool_ = *pool;
  runtime::MetricsRegistry& reg = ctx.metrics();
  probes_ = &reg.counter("clock_probes", "round trips answered");
  corrections_ = &reg.counter("clock_corrections", "corrections applied");
  messages_malformed_ = &reg.counter("messages_malformed", "malformed messages dropped");
  {
    const std::lock_guard lock(mutex_);
    mcast_stats_ = {};
    legs_.clear();
  }
  clock_ = &ctx.clock();
  add_handlers();
  return ok();
}

void ClockClient::add_handlers() {
  runtime::DataPath& path = data_path();
  // The master's messages only; anything else is counted malformed.
  path.count_rejected_in(*messages_malformed_);
  path.on(wire::MessageType::clock_probe, [this](Completion& c, std::int64_t) {
    // t2 and the arrival on this host's monotonic clock: read first thing.
    const std::int64_t t2 = core::synced_clock().local_ns();
    const std::int64_t received_ns = core::monotonic_ns();
    on_probe(c, t2, received_ns);
  });
  path.on(wire::MessageType::clock_correction, [this](Completion& c, std::int64_t) {
    if (c.peer != master_ || c.message.segment_count != 1 || !apply(c.message.segments[0].bytes()))
      data_path().reject();
  });
  path.on_work([this](std::int64_t now) { return work(now); });
  // The multicast socket is not the endpoint's: looked at (and NACKs sent when due) at least
  // every millisecond.
  if (mcast_) path.at([this] { return clock_->now_ns() + kNapNs; });
}

void ClockClient::release() {
  endpoint_ = nullptr;
  pool_ = nullptr;
}

void ClockClient::on_probe(Completion& c, std::int64_t t2, std::int64_t received_ns) {
  wire::ClockProbe p;
  if (c.peer != master_ || c.message.segment_count != 1 ||
      wire::decode(c.message.segments[0].bytes(), p) != wire::PayloadStatus::ok) {
    data_path().reject();
    return;
  }
  {
    const std::lock_guard lock(mutex_);
    legs_.push_back({p.round, p.probe, received_ns - p.t1});
    if (legs_.size() > kLegsKept) legs_.pop_front();
  }
  wire::ClockReply r{p.round, p.probe, p.t1, t2, 0};
  r.t3 = core::synced_clock().local_ns();
  std::array<std::byte, wire::kClockReplySize> bytes{};
  wire::encode(r, bytes);
  if (data_path().send_copy(*pool_, master_, wire::MessageType::clock_reply, 0, bytes) ==
      SendStatus::ok) {
    data_path().flush();
    probes_->add_single_writer();
  }
}

bool ClockClient::apply(std::span<const std::byte> correction) {
  wire::ClockCorrectionMsg m;
  if (wire::decode(correction, m) != wire::PayloadStatus::ok) return false;
  core::synced_clock().set_correction({m.shift_ns, m.scale, m.precision_ns, m.round});
  drift_ppm_.store(m.drift_ppm, std::memory_order_relaxed);
  corrections_->add_single_writer();
  return true;
}

void ClockClient::on_datagram(std::span<const std::byte> payload) {
  if (payload.size() != 8 + wire::kClockCorrectionSize) {
    messages_malformed_->add_single_writer();
    return;
  }
  if (wire::load_le32(payload.data()) != self_) return;  // another node's
  if (!apply(payload.subspan(8))) messages_malformed_->add_single_writer();
}

int ClockClient::work(std::int64_t /*now*/) {
  if (!mcast_) return 0;
  const int n =
      mcast_->pump(core::monotonic_ns(), [this](std::span<const std::byte> d) { on_datagram(d); });
  if (n > 0) {
    const std::lock_guard lock(mutex_);
    mcast_stats_ = mcast_->stats();
  }
  return n;
}

Result<nlohmann::json> ClockClient::action(std::string_view name, const nlohmann::json& args) {
  if (name != "legs") return runtime::Application::action(name, args);
  nlohmann::json legs = nlohmann::json::array();
  const std::lock_guard lock(mutex_);
  for (const Leg& l : legs_) legs.push_back({l.round, l.probe, l.forward_ns});
  return nlohmann::json{{"fields", {"round", "probe", "forward_ns"}}, {"legs", std::move(legs)}};
}

nlohmann::json ClockClient::results() const {
  if (probes_ == nullptr) return nlohmann::json::object();
  const core::ClockCorrection c = core::synced_clock().correction();
  const core::SyncedClock& clock = core::synced_clock();
  // The corrected clock's true error, where the master's clock is this host's monotonic clock
  // (master and node on one host): corrected minus monotonic, read back to back, the tightest of
  // a few tries (a read the thread was preempted in would be off by half the preemption).
  std::int64_t local = 0;
  std::int64_t mono = 0;
  std::int64_t window = std::numeric_limits<std::int64_t>::max();
  for (int i = 0; i < 16; ++i) {
    const std::int64_t before = core::monotonic_ns();
    const std::int64_t l = clock.local_ns();
    const std::int64_t after = core::monotonic_ns();
    if (after - before < window) {
      window = after - before;
      local = l;
      mono = before + (after - before) / 2;
    }
  }
  nlohmann::json r = {{"probes", probes_->value()},
                      {"corrections", corrections_->value()},
                      {"shift_ns", c.shift_ns},
                      {"scale", c.scale},
                      {"drift_ppm", drift_ppm_.load(std::memory_order_relaxed)},
                      {"precision_ns", c.precision_ns},
                      {"local_minus_monotonic_ns", local - mono},
                      {"error_ns", clock.correct(local) - mono}};
  if (mcast_) {
    const std::lock_guard lock(mutex_);
    r["multicast"] = mcast_stats_;
  }
  return r;
}

}  // namespace daqflow::apps::clock
