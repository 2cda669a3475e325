// daqflow bench stream: source/sink runs over a sweep of message size, pipelining depth and N,
// one run per point; bandwidth from the sinks' sampled throughput.
#include <fmt/format.h>

#include "cluster_run.hpp"
#include "daqflow/bench/runners.hpp"
#include "daqflow/bench/sweep.hpp"
#include "daqflow/runtime/params.hpp"

namespace daqflow::bench {

namespace {

struct Point {
  std::uint64_t size;
  std::uint64_t depth;
  int n;
};

bool uses_n(const std::string& pattern) {
  return pattern != "1to1";
}

}  // namespace

std::string stream_stem(const StreamOptions& o) {
  std::vector<std::string> swept;
  if (o.sizes.size() > 1) swept.emplace_back("size");
  if (o.depths.size() > 1) swept.emplace_back("depth");
  if (uses_n(o.pattern) && o.ns.size() > 1) swept.emplace_back("n");
  const std::string tail =
      swept.empty() ? std::to_string(o.sizes.front()) : fmt::format("{}", fmt::join(swept, "-"));
  return fmt::format("stream-{}-{}-{}", o.pattern, o.cluster.transport, tail);
}

std::string command_line(const StreamOptions& o) {
  std::string cmd =
      fmt::format("daqflow bench stream --pattern {} --transport {} --sizes {} --depths {}",
                  o.pattern, o.cluster.transport, format_sweep(o.sizes), format_sweep(o.depths));
  if (uses_n(o.pattern)) cmd += " --n " + format_sweep(o.ns);
  cmd += fmt::format(" --duration {:g} --sample-ms {} --verify {} --idle {} --port-base {}",
                     o.duration_s, o.sample_interval_ms, o.verify, o.cluster.idle,
                     o.cluster.port_base);
  cmd += cluster_options(o.cluster);
  return cmd;
}

namespace {

// The result set of a stream sweep before its rows: its name, parameters and columns.
ResultSet stream_result_set(const StreamOptions& o, const std::vector<std::uint64_t>& ns) {
  ResultSet r = cluster_result_set("stream", stream_stem(o), o.cluster, command_line(o));
  r.params.update(nlohmann::json{{"pattern", o.pattern},
                                 {"sizes", o.sizes},
                                 {"depths", o.depths},
                                 {"n", ns},
                                 {"duration_s", o.duration_s},
                                 {"sample_interval_ms", o.sample_interval_ms},
                                 {"verify", o.verify}});
  r.columns = {"message_size",
               "depth",
               "senders",
               "receivers",
               "mb_s_total_mean",
               "mb_s_total_sd",
               "mb_s_per_receiver_mean",
               "mb_s_per_receiver_sd",
               "samples",
               "msgs_per_s"};
  return r;
}

}  // namespace

Result<BenchOutput> run_stream(const StreamOptions& o, BenchEnv& env) {
  if (auto ok = check_transport(o.cluster.transport); !ok) return ok.error();
  if (!known_pattern(o.pattern)) {
    return Error("unknown pattern '" + o.pattern + "' (expected 1to1, 1toN, Nto1, nton or nxn)");
  }
  if (o.sizes.empty() || o.depths.empty() || o.ns.empty()) {
    return Error("stream: --sizes, --depths and --n need at least one value each");
  }
  std::vector<Point> points;
  const std::vector<std::uint64_t> ns = uses_n(o.pattern) ? o.ns : std::vector<std::uint64_t>{1};
  for (auto n : ns) {
    for (auto depth : o.depths) {
      for (auto size : o.sizes) points.push_back({size, depth, static_cast<int>(n)});
    }
  }

  BenchOutput out;
  ResultSet& r = out.result;
  r = stream_result_set(o, ns);

  // The plot's x axis is the first swept dimension; every combination of the others is a
  // series (total and, with several receivers, per receiver).
  const bool by_size = o.sizes.size() > 1 || (o.depths.size() == 1 && ns.size() == 1);
  const bool by_depth = !by_size && o.depths.size() > 1;
  std::vector<std::pair<std::string, Series>> series;
  const auto series_for = [&](const std::string& key) -> Series& {
    for (auto& [k, s] : series) {
      if (k == key) return s;
    }
    series.emplace_back(key, Series{key, {}, Series::Style::points_and_line});
    return series.back().second;
  };

  for (std::size_t i = 0; i < points.size(); ++i) {
    const Point& p = points[i];
    StreamShape shape;
    shape.pattern = o.pattern;
    shape.n = p.n;
    shape.message_size = p.size;
    shape.depth = static_cast<std::uint32_t>(p.depth);
    shape.verify = o.verify;
    shape.sample_interval_ms = o.sample_interval_ms;
    const std::string what =
        fmt::format("stream {} {} {} B depth {}{}", o.pattern, o.cluster.transport, p.size, p.depth,
                    uses_n(o.pattern) ? fmt::format(" n {}", p.n) : "");
    if (env.progress != nullptr)
      env.progress->begin(static_cast<int>(i + 1), static_cast<int>(points.size()), what);
    const std::string name = fmt::format("{}-{}", r.stem, i);
    ClusterSettings cluster = o.cluster;
    cluster.output_dir = point_dir(env, name);
    cluster.pipeline_depth = shape.depth;
    cluster.max_message_size = std::max<std::uint64_t>(p.size, 1);
    auto summary = run_point(stream_yaml(cluster, shape), name, o.duration_s, env);
    if (!summary) return summary.error().context(what);

    const int nr = stream_receivers(o.pattern, p.n);
    auto receivers = receiver_rates(*summary, nr);
    if (!receivers) {
      return receivers.error().context(
          fmt::format("{} ({:g} s; configuration, summary and logs in {})", what, o.duration_s,
                      point_dir(env, name)));
    }
    const StreamFigures f = combine_receivers(*receivers);
    add_row(r, {p.size, p.depth, stream_senders(o.pattern, p.n), nr, f.total_mean, f.total_sd,
                f.per_receiver_mean, f.per_receiver_sd, f.samples, f.messages_per_s});
    if (env.progress != nullptr) {
      env.progress->line(
          fmt::format("{}: {:.1f} MB/s total (sd {:.1f}), {:.1f} MB/s per "
                      "receiver, {} samples",
                      what, f.total_mean, f.total_sd, f.per_receiver_mean, f.samples));
    }
    if (i == 0) {
      r.summary = {{"mb_s_total_mean", f.total_mean},
                   {"mb_s_total_sd", f.total_sd},
                   {"mb_s_per_receiver_mean", f.per_receiver_mean},
                   {"message_size", p.size},
                   {"depth", p.depth},
                   {"senders", stream_senders(o.pattern, p.n)},
                   {"receivers", nr},
                   {"msgs_per_s", f.messages_per_s}};
    }
    const double x = by_size    ? static_cast<double>(p.size)
                     : by_depth ? static_cast<double>(p.depth)
                                : static_cast<double>(p.n);
    std::string rest;
    if (!by_size) rest += fmt::format(" {} B", p.size);
    if (!by_depth && (by_size || o.depths.size() > 1)) rest += fmt::format(" depth {}", p.depth);
    if (uses_n(o.pattern) && (by_size || by_depth)) rest += fmt::format(" n {}", p.n);
    series_for("total" + rest).points.emplace_back(x, f.total_mean);
    if (nr > 1) series_for("per receiver" + rest).points.emplace_back(x, f.per_receiver_mean);
  }

  out.plot.title = fmt::format("Stream {} over {}", o.pattern, o.cluster.transport);
  out.plot.x_label = by_size ? "message size (bytes)" : by_depth ? "pipelining depth" : "N";
  out.plot.y_label = "bandwidth (MB/s)";
  out.plot.log_x = by_size || by_depth;
  for (auto& [key, s] : series) out.plot.series.push_back(std::move(s));
  return out;
}

}  // namespace daqflow::bench
