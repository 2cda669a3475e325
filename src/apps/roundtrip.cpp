#include "roundtrip.hpp"

#include <algorithm>

namespace daqflow::apps {

namespace {

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

Result<void> RoundTrip::setup(runtime::AppContext& ctx, const RoundTripSettings& s) {
  peer_id_ = s.peer;
  initiator_ = s.role == "initiator";
  iterations_ = s.iterations;
  warmup_ = s.warmup;
  settle_ns_ = s.settle_ms * 1'000'000;
  fit_min_size_ = s.fit_min_size;
  fit_max_size_ = s.fit_max_size;
  if (s.max_size < s.min_size) {
    return runtime::param_error("max_size", std::to_string(s.max_size) + " is below min_size (" +
                                                std::to_string(s.min_size) + ")");
  }
  const std::uint32_t limit = ctx.cluster().transports.endpoint.max_message_size;
  if (s.max_size > limit) {
    return runtime::param_error(
        "max_size", std::to_string(s.max_size) + " bytes exceeds transports.max_message_size (" +
                        std::to_string(limit) + "); raise max_message_size or lower max_size");
  }
  if (fit_max_size_ != 0 && fit_max_size_ < fit_min_size_) {
    return runtime::param_error("fit_max_size", "must be 0 or at least fit_min_size");
  }
  auto peer_index = ctx.index_of(peer_id_);
  if (!peer_index) return peer_index.error().context("parameter 'peer'");
  if (*peer_index == ctx.self().index) {
    return runtime::param_error("peer", "'" + id() + "' cannot be its own peer");
  }
  self_ = ctx.self().index;
  peer_ = *peer_index;
  sizes_ = sweep_sizes(s.min_size, s.max_size);
  if (auto r = open_endpoint(ctx); !r) return r;
  add_metrics(ctx.metrics());
  size_index_ = 0;
  round_ = 0;
  tag_ = 0;
  awaiting_ = false;
  last_echoed_ = false;
  pending_head_ = 0;
  pending_count_ = 0;
  points_done_.store(0);
  in_flight_.store(0);
  settling_ = initiator_ && settle_ns_ > 0;
  settle_start_ns_ = 0;
  window_count_ = 0;
  previous_median_ns_ = -1;
  settle_round_trips_.store(0);
  settle_took_ns_.store(0);
  settled_.store(!settling_);
  register_handlers(data_path());
  return ok();
}

Result<void> RoundTrip::open_endpoint(runtime::AppContext& ctx) {
  auto endpoint = detail::open_endpoint(ctx, {{"peer", {&peer_, 1}}});
  if (!endpoint) return endpoint.error();
  endpoint_ = *endpoint;
  if (initiator_) {
    auto pool = data_path().send_pool(id() + ".ping", std::max<std::uint64_t>(sizes_.back(), 1),
                                      kPingBuffers);
    if (!pool) return pool.error();
    pool_ = *pool;
    rtt_ns_.assign(iterations_, 0);
    points_.assign(sizes_.size(), SizePoint{});
  } else {
    rtt_ns_.clear();
    points_.clear();
  }
  return ok();
}

void RoundTrip::add_metrics(runtime::MetricsRegistry& m) {
  messages_out_ = &m.counter("messages_out", initiator_ ? "pings sent" : "pongs sent");
  bytes_out_ = &m.counter("bytes_out", "payload bytes sent", runtime::Unit::bytes);
  messages_in_ = &m.counter("messages_in", initiator_ ? "pongs received" : "pings received");
  bytes_in_ = &m.counter("bytes_in", "payload bytes received", runtime::Unit::bytes);
  size_gauge_ =
      &m.gauge("message_size", "size of the messages now being timed", runtime::Unit::bytes);
  size_gauge_->set(static_cast<double>(sizes_.front()));
}

void RoundTrip::release() {
  for (auto& m : pending_) m.clear();
  pending_count_ = 0;
  endpoint_ = nullptr;
  pool_ = nullptr;
}

void RoundTrip::peer_lost(const std::string& why) {
  for (auto& m : pending_) m.clear();
  pending_count_ = 0;
  awaiting_ = false;
  in_flight_.store(0, std::memory_order_release);
  if (!winding_down()) fail("peer '" + peer_id_ + "' " + why);
}

nlohmann::json RoundTrip::results() const {
  if (!initiator_) {
    return {{"role", "responder"}, {"peer", peer_id_}, {"pongs", messages_out_->value()}};
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
  r["settle"] = {{"round_trips", settle_round_trips_.load()},
                 {"ms", static_cast<double>(settle_took_ns_.load()) * 1e-6},
                 {"settled", settled_.load()}};
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
  if (const auto it = app.find("settle"); it != app.end()) run["settle"] = *it;
}

}  // namespace daqflow::apps
