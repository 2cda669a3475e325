#include "roundtrip.hpp"

#include <algorithm>

namespace daqflow::apps {

namespace {

constexpr std::int64_t kMaxSize = std::int64_t{1} << 30;
constexpr std::int64_t kMaxIterations = 10'000'000;
constexpr std::size_t kPingBuffers = 4;

// The sweep: min, 2 min, 4 min, ... and max itself (0 is followed by 1).
std::vector<std::uint64_t> sweep_sizes(std::uint64_t min, std::uint64_t max) {
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t s = min;;) {
    sizes.push_back(s);
    if (s >= max) break;
    s = std::min(s == 0 ? 1 : 2 * s, max);
  }
  return sizes;
}

}  // namespace

RoundTrip::~RoundTrip() {
  release();
  detail::retire_pool(pool_);
}

Result<void> RoundTrip::configure(runtime::AppContext& ctx) {
  release();
  detail::retire_pool(pool_);
  const std::lock_guard lock(config_mutex_);
  id_ = ctx.self().id;
  self_ = ctx.self().index;
  const detail::Params p(ctx);

  auto peer = p.string("peer");
  if (!peer) return peer.error();
  auto role = p.string("role");
  if (!role) return role.error();
  if (*role != "initiator" && *role != "responder") {
    return p.error("role", "'" + *role + "' is not one of: initiator, responder");
  }
  initiator_ = *role == "initiator";
  auto min_size = p.integer("min_size");
  if (!min_size) return min_size.error();
  auto max_size = p.integer("max_size");
  if (!max_size) return max_size.error();
  auto iterations = p.integer("iterations");
  if (!iterations) return iterations.error();
  auto warmup = p.integer("warmup");
  if (!warmup) return warmup.error();
  auto fit_min = p.integer("fit_min_size");
  if (!fit_min) return fit_min.error();
  auto fit_max = p.integer("fit_max_size");
  if (!fit_max) return fit_max.error();
  if (*min_size < 0 || *min_size > kMaxSize)
    return p.error("min_size", "must be 0.." + std::to_string(kMaxSize));
  if (*max_size < *min_size || *max_size > kMaxSize) {
    return p.error("max_size", std::to_string(*max_size) + " must be between min_size (" +
                                   std::to_string(*min_size) + ") and " + std::to_string(kMaxSize));
  }
  const std::uint32_t limit = ctx.cluster().transports.max_message_size;
  if (static_cast<std::uint64_t>(*max_size) > limit) {
    return p.error("max_size",
                   std::to_string(*max_size) + " bytes exceeds transports.max_message_size (" +
                       std::to_string(limit) + "); raise max_message_size or lower max_size");
  }
  if (*iterations < 1 || *iterations > kMaxIterations) {
    return p.error("iterations", "must be 1.." + std::to_string(kMaxIterations));
  }
  if (*warmup < 0) return p.error("warmup", "must be 0 or more");
  if (*fit_min < 0) return p.error("fit_min_size", "must be 0 or more");
  if (*fit_max < 0) return p.error("fit_max_size", "must be 0 (no bound) or more");
  if (*fit_max != 0 && *fit_max < *fit_min) {
    return p.error("fit_max_size", "must be 0 or at least fit_min_size");
  }

  auto peer_index = ctx.index_of(*peer);
  if (!peer_index) return peer_index.error().context("application '" + id_ + "': parameter 'peer'");
  if (*peer_index == self_) return p.error("peer", "'" + id_ + "' cannot be its own peer");
  peer_ = *peer_index;
  peer_id_ = *peer;
  warmup_ = static_cast<std::uint64_t>(*warmup);
  iterations_ = static_cast<std::uint64_t>(*iterations);
  fit_min_size_ = static_cast<std::uint64_t>(*fit_min);
  fit_max_size_ = static_cast<std::uint64_t>(*fit_max);
  sizes_ =
      sweep_sizes(static_cast<std::uint64_t>(*min_size), static_cast<std::uint64_t>(*max_size));

  auto endpoint = ctx.endpoint();
  if (!endpoint) return endpoint.error().context("application '" + id_ + "': endpoint");
  endpoint_ = *endpoint;
  if (auto connected = endpoint_->connect(peer_); !connected) {
    return connected.error().context("application '" + id_ + "': connecting to '" + peer_id_ + "'");
  }

  if (initiator_) {
    auto pool = endpoint_->make_send_pool(id_ + ".ping", std::max<std::uint64_t>(sizes_.back(), 1),
                                          kPingBuffers);
    if (!pool) return pool.error().context("application '" + id_ + "'");
    pool_ = std::move(*pool);
    rtt_ns_.assign(iterations_, 0);
    points_.assign(sizes_.size(), SizePoint{});
  } else {
    rtt_ns_.clear();
    points_.clear();
  }

  runtime::MetricsRegistry& m = ctx.metrics();
  messages_out_ = &m.counter("messages_out", initiator_ ? "pings sent" : "pongs sent");
  bytes_out_ = &m.counter("bytes_out", "payload bytes sent");
  messages_in_ = &m.counter("messages_in", initiator_ ? "pongs received" : "pings received");
  bytes_in_ = &m.counter("bytes_in", "payload bytes received");
  size_gauge_ = &m.gauge("message_size", "size of the messages now being timed");
  size_gauge_->set(static_cast<double>(sizes_.front()));

  size_index_ = 0;
  round_ = 0;
  tag_ = 0;
  awaiting_ = false;
  last_echoed_ = false;
  pending_head_ = 0;
  pending_count_ = 0;
  points_done_.store(0);
  pongs_.store(0);
  in_flight_.store(0);
  enabled_.store(false);
  halting_.store(false);
  halt_seen_.store(false);
  failed_.store(false);
  finished_.store(false);
  configured_.store(true, std::memory_order_release);
  return ok();
}

Result<void> RoundTrip::enable() {
  enabled_.store(true, std::memory_order_release);
  return ok();
}

Result<void> RoundTrip::suspend() {
  enabled_.store(false, std::memory_order_release);
  return ok();
}

Result<void> RoundTrip::resume() {
  return enable();
}

void RoundTrip::begin_halt() {
  halting_.store(true, std::memory_order_release);
  enabled_.store(false, std::memory_order_release);
}

void RoundTrip::release() {
  configured_.store(false, std::memory_order_release);
  enabled_.store(false);
  for (auto& c : completions_) c.message.clear();
  for (auto& m : pending_) m.clear();
  pending_count_ = 0;
  endpoint_ = nullptr;
  detail::release_pool_if_idle(pool_);
}

void RoundTrip::fail_once(const std::string& reason) {
  if (!failed_.exchange(true, std::memory_order_acq_rel)) fail(reason);
}

void RoundTrip::peer_lost(const std::string& why) {
  for (auto& m : pending_) m.clear();
  pending_count_ = 0;
  awaiting_ = false;
  in_flight_.store(0, std::memory_order_release);
  if (halting_.load(std::memory_order_acquire) || finished_.load(std::memory_order_acquire)) return;
  fail_once("peer '" + peer_id_ + "' " + why);
}

int RoundTrip::do_work() {
  if (endpoint_ == nullptr) return 0;
  const bool halting = halting_.load(std::memory_order_acquire);
  const int work = initiator_ ? initiator_work(halting) : responder_work();
  if (halting) halt_seen_.store(true, std::memory_order_release);
  return work;
}

void RoundTrip::wait_for_work(std::chrono::microseconds timeout) {
  if (endpoint_ == nullptr) {
    Application::wait_for_work(timeout);
    return;
  }
  endpoint_->wait(timeout);
}

bool RoundTrip::drained() const {
  if (!configured_.load(std::memory_order_acquire)) return true;
  return halt_seen_.load(std::memory_order_acquire) &&
         in_flight_.load(std::memory_order_acquire) == 0;
}

bool RoundTrip::finished() const {
  return finished_.load(std::memory_order_acquire);
}

nlohmann::json RoundTrip::results() const {
  const std::lock_guard lock(config_mutex_);
  if (!initiator_) {
    return {{"role", "responder"}, {"peer", peer_id_}, {"pongs", pongs_.load()}};
  }
  const std::size_t done = std::min(points_done_.load(std::memory_order_acquire), points_.size());
  nlohmann::json points = nlohmann::json::array();
  for (std::size_t i = 0; i < done; ++i) {
    const SizePoint& p = points_[i];
    points.push_back({
        {"size", p.size},
        {"rtt_median_us", p.rtt.median_us},
        {"rtt_p99_us", p.rtt.p99_us},
        {"rtt_min_us", p.rtt.min_us},
        {"rtt_mean_us", p.rtt.mean_us},
        {"tau_median_us", p.tau_median_us()},
        {"bandwidth_mb_s", p.bandwidth_mb_s()},
    });
  }
  nlohmann::json r = {
      {"role", "initiator"}, {"peer", peer_id_},       {"iterations", iterations_},
      {"warmup", warmup_},   {"sizes", sizes_.size()}, {"points", std::move(points)},
  };
  const auto fit = fit_tau({points_.data(), done}, fit_min_size_, fit_max_size_);
  if (fit) {
    r["fit"] = {
        {"tau0_us", fit->tau0_us},
        {"c_us_per_kb", fit->c_us_per_kb},
        {"b_inf_mb_s", fit->b_inf_mb_s ? nlohmann::json(*fit->b_inf_mb_s) : nlohmann::json()},
        {"from_size", fit->from_size},
        {"to_size", fit->to_size},
        {"r2", fit->r2},
        {"points", fit->points},
    };
  } else {
    r["fit"] = nullptr;
  }
  return r;
}

void RoundTrip::fold_results(nlohmann::json& run, const std::string& id,
                             const nlohmann::json& app) {
  if (!app.is_object() || app.value("role", "") != "initiator") return;
  if (!run.is_object()) run = nlohmann::json::object();
  run["roundtrip"] = id;
  if (const auto it = app.find("points"); it != app.end()) run["points"] = *it;
  if (const auto it = app.find("fit"); it != app.end()) run["fit"] = *it;
}

runtime::AppType roundtrip_type() {
  using runtime::ParamKind;
  using runtime::ParamSpec;
  runtime::AppType t;
  t.name = "roundtrip";
  t.help =
      "Round-trip benchmark: the initiator sweeps message sizes, one ping in flight, and fits "
      "tau(P) = c*P + tau0; the responder echoes every ping (zero copy).";
  // One type for both roles: the responder answers from Configure on, so the enable order of
  // the pair does not matter.
  t.enable_rank = 0;
  t.peer_params = {"peer"};
  t.params = {
      ParamSpec{"peer", ParamKind::app_ref, "the other roundtrip application", "", {}, {}, {}, {}},
      ParamSpec{"role",
                ParamKind::string,
                "initiator (sweeps and times) or responder (echoes)",
                "",
                {},
                {},
                {"initiator", "responder"},
                {}},
      ParamSpec{"min_size",
                ParamKind::integer,
                "first message size in bytes",
                "64",
                0.0,
                static_cast<double>(kMaxSize),
                {},
                {}},
      ParamSpec{"max_size",
                ParamKind::integer,
                "last message size in bytes (sizes double)",
                "4194304",
                0.0,
                static_cast<double>(kMaxSize),
                {},
                {}},
      ParamSpec{"iterations",
                ParamKind::integer,
                "timed round trips per size",
                "1000",
                1.0,
                static_cast<double>(kMaxIterations),
                {},
                {}},
      ParamSpec{"warmup",
                ParamKind::integer,
                "untimed round trips before each size",
                "50",
                0.0,
                {},
                {},
                {}},
      ParamSpec{"fit_min_size",
                ParamKind::integer,
                "smallest size in the fit of tau(P) = c*P + tau0 (the linear part)",
                "65536",
                0.0,
                {},
                {},
                {}},
      ParamSpec{"fit_max_size",
                ParamKind::integer,
                "largest size in the fit (0: no bound); sizes beyond the CPU caches often follow "
                "a second, steeper line",
                "0",
                0.0,
                {},
                {},
                {}},
  };
  t.make = [] { return std::make_unique<RoundTrip>(); };
  t.fold_results = &RoundTrip::fold_results;
  return t;
}

}  // namespace daqflow::apps
