// daqflow bench roundtrip: one sweep of the roundtrip application pair, its per-size round-trip
// times and the fit tau(P) = c*P + tau0.
#include <fmt/format.h>

#include <cmath>

#include "cluster_run.hpp"
#include "daqflow/bench/runners.hpp"
#include "daqflow/runtime/params.hpp"

namespace daqflow::bench {

std::string command_line(const RoundtripOptions& o) {
  const auto& s = o.shape;
  std::string cmd = fmt::format(
      "daqflow bench roundtrip --transport {} --sizes {}..{} --iterations {} --warmup {} "
      "--fit {}..{} --idle {} --port-base {}",
      o.cluster.transport, s.min_size, s.max_size, s.iterations, s.warmup, s.fit_min_size,
      s.fit_max_size, o.cluster.idle, o.cluster.port_base);
  cmd += cluster_options(o.cluster);
  return cmd;
}

namespace {

// The fit tau(P) = c*P + tau0 the initiator made, when it made one: into the summary, and as a
// line over the fitted range into the plot.
Result<void> add_fit(const nlohmann::json& run, nlohmann::json& summary, Plot& plot) {
  const auto fit = run.find("fit");
  if (fit != run.end() && fit->is_object()) {
    runtime::ParamReader f(*fit, "the round-trip fit", "result");
    const double tau0 = f.get<double>("tau0_us");
    const double c = f.get<double>("c_us_per_kb");
    const double r2 = f.get<double>("r2");
    const double from = f.get<double>("from_size");
    const double to = f.get<double>("to_size");
    if (auto read = f.status(); !read) return read.error();
    summary["tau0_us"] = tau0;
    summary["c_us_per_kb"] = c;
    if (const auto b = fit->find("b_inf_mb_s"); b != fit->end() && b->is_number()) {
      summary["binf_mb_s"] = b->get<double>();
    }
    summary["r2"] = r2;
    summary["fit_from"] = from;
    summary["fit_to"] = to;
    // RTT = 2 tau(P), drawn over the fitted range, where the line is a claim.
    Series line{fmt::format("fit 2(cP + tau0): tau0 {:.2f} us, c {:.4f} us/kB", tau0, c),
                {},
                Series::Style::dashed_line};
    constexpr int kSteps = 48;
    for (int i = 0; i <= kSteps && from > 0 && to > from; ++i) {
      const double size = from * std::pow(to / from, static_cast<double>(i) / kSteps);
      const double rtt = 2 * (c * size / 1000 + tau0);
      if (rtt > 0) line.points.emplace_back(size, rtt);
    }
    plot.series.push_back(std::move(line));
  }
  return ok();
}

}  // namespace

Result<BenchOutput> run_roundtrip(const RoundtripOptions& o, BenchEnv& env) {
  if (auto ok = check_transport(o.cluster.transport); !ok) return ok.error();
  // A single size (compare --kind latency) is a different figure set from the sweep.
  const std::string stem =
      o.shape.min_size == o.shape.max_size
          ? fmt::format("roundtrip-{}-{}", o.cluster.transport, o.shape.max_size)
          : "roundtrip-" + o.cluster.transport;
  ClusterSettings cluster = o.cluster;
  cluster.output_dir = point_dir(env, stem);
  cluster.max_message_size = std::max<std::uint64_t>(o.shape.max_size, 1);
  if (env.progress != nullptr) {
    env.progress->begin(1, 1,
                        fmt::format("roundtrip {} {}..{} B", o.cluster.transport, o.shape.min_size,
                                    o.shape.max_size));
  }
  auto summary = run_point(roundtrip_yaml(cluster, o.shape), stem, o.timeout_s, env);
  if (!summary) return summary.error().context("roundtrip over " + o.cluster.transport);
  const nlohmann::json& run = summary->results;
  const auto points = run.find("points");
  if (points == run.end() || !points->is_array() || points->empty()) {
    return Error("roundtrip over " + o.cluster.transport + ": the run measured no sizes");
  }
  std::size_t expected = 1;
  for (std::uint64_t v = std::max<std::uint64_t>(o.shape.min_size, 1); v < o.shape.max_size;
       v *= 2) {
    ++expected;
  }
  if (points->size() < expected) {
    return Error(fmt::format(
        "roundtrip over {}: {} of {} sizes measured within {} s (raise --timeout or lower "
        "--iterations)",
        o.cluster.transport, points->size(), expected, o.timeout_s));
  }

  BenchOutput out;
  out.result = cluster_result_set("roundtrip", stem, o.cluster, command_line(o));
  ResultSet& r = out.result;
  r.params.update(nlohmann::json{{"min_size", o.shape.min_size},
                                 {"max_size", o.shape.max_size},
                                 {"iterations", o.shape.iterations},
                                 {"warmup", o.shape.warmup},
                                 {"fit_min_size", o.shape.fit_min_size},
                                 {"fit_max_size", o.shape.fit_max_size}});
  r.columns = {"message_size", "rtt_min_us",    "rtt_median_us", "rtt_p99_us",
               "rtt_mean_us",  "tau_median_us", "mb_s"};
  Series median{"median RTT", {}, Series::Style::points_and_line};
  Series minimum{"minimum RTT", {}, Series::Style::points};
  Series p99{"99th percentile RTT", {}, Series::Style::points};
  for (const auto& point : *points) {
    runtime::ParamReader p(point, "a point of the round-trip results", "result");
    const auto size = p.get<std::uint64_t>("size");
    const auto median_us = p.get<double>("rtt_median_us");
    const auto min_us = p.get<double>("rtt_min_us");
    const auto p99_us = p.get<double>("rtt_p99_us");
    const auto mean_us = p.get<double>("rtt_mean_us");
    const auto tau_us = p.get<double>("tau_median_us");
    const auto mb_s = p.get<double>("bandwidth_mb_s");
    if (auto read = p.status(); !read) return read.error();
    add_row(r, {size, min_us, median_us, p99_us, mean_us, tau_us, mb_s});
    const auto x = static_cast<double>(size);
    median.points.emplace_back(x, median_us);
    minimum.points.emplace_back(x, min_us);
    p99.points.emplace_back(x, p99_us);
    if (size == 64) {
      r.summary["rtt_median_64_us"] = median_us;
      r.summary["rtt_min_64_us"] = min_us;
      r.summary["rtt_p99_64_us"] = p99_us;
    }
  }

  out.plot.title = fmt::format("Round trip over {}: RTT against message size", r.transport);
  out.plot.x_label = "message size (bytes)";
  out.plot.y_label = "round-trip time (us)";
  out.plot.log_x = true;
  out.plot.log_y = true;
  out.plot.series = {median, minimum, p99};
  if (auto fitted = add_fit(run, r.summary, out.plot); !fitted) return fitted.error();
  // How long the first size ran untimed before its round trips settled (roundtrip's settle_ms).
  if (const auto settle = run.find("settle"); settle != run.end() && settle->is_object()) {
    r.summary["settle"] = *settle;
  }
  return out;
}

}  // namespace daqflow::bench
