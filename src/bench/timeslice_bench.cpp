// daqflow bench timeslice: the all-to-all table on this machine. For each contribution size, in
// rounds that interleave the runs: the raw N x N stream of the transport (every node a source and a
// sink, messages the size of a contribution on the wire), then time-slice building in chaotic and
// in scheduled order on the same nodes. The figure is the receive rate per node (bytes/us, which is
// MB/s), and each order's median as a ratio to the stream's.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <vector>

#include "cluster_run.hpp"
#include "daqflow/bench/runners.hpp"
#include "daqflow/bench/sweep.hpp"
#include "daqflow/runtime/params.hpp"

namespace daqflow::bench {

namespace {

struct StreamRun {
  double per_receiver_mb_s = 0;
  double messages_per_s = 0;  // summed over the receivers
};

struct TimesliceRun {
  double per_builder_mb_s = 0;
  double timeslices_per_s = 0;  // summed over the builders
  std::uint64_t incomplete = 0;
  double clock_precision_ns = -1;  // scheduled in fixed slots: the clock master's worst node
  double slot_us = 0;      // scheduled: the fixed slot, or a builder's mean turn (duration / turns)
  double control_pct = 0;  // percent of the bytes sent
};

std::uint64_t message_size_for(std::uint64_t wire_bytes) {
  std::uint64_t size = 1u << 16;
  while (size < wire_bytes + 4096) size *= 2;
  return size;
}

Result<StreamRun> run_stream_point(const TimesliceOptions& o, const TimesliceShape& s,
                                   const std::string& name, const std::string& what,
                                   BenchEnv& env) {
  StreamShape shape;
  shape.pattern = "nxn";
  shape.n = s.n;
  shape.message_size = timeslice_contribution_wire_bytes(s);
  shape.depth = o.cluster.pipeline_depth;
  // With CRC-32C the inputs write and the builders read every byte: the stream then checks
  // every byte of its messages too.
  shape.verify = s.crc ? "full" : "ends";
  ClusterSettings cluster = o.cluster;
  cluster.output_dir = point_dir(env, name);
  cluster.max_message_size = message_size_for(shape.message_size);
  auto summary = run_point(stream_yaml(cluster, shape), name, o.duration_s, env);
  if (!summary) return summary.error().context(what);
  auto receivers = receiver_rates(*summary, s.n);
  if (!receivers) {
    return receivers.error().context(fmt::format("{} (see {})", what, cluster.output_dir));
  }
  const StreamFigures f = combine_receivers(*receivers);
  return StreamRun{f.per_receiver_mean, f.messages_per_s};
}

// The share of the bytes sent that are no contribution: acknowledgements, turns, the builders'
// reports, the clock's probes and corrections, the manager's assignments (over the transports or
// by multicast). Every application's endpoint counters, and its multicast sender's, from the run's
// summary.
double control_share(const control::RunSummary& summary) {
  double all = 0;
  double contributions = 0;
  for (const control::AppOutcome& app : summary.applications) {
    const double sent = app.endpoint.is_object() ? app.endpoint.value("bytes_sent", 0.0) : 0.0;
    all += sent;
    // An input's contributions (its other messages, the scheduled order's requests for turns,
    // are control).
    if (app.type == "ts_input" && app.results.is_object()) {
      contributions += app.results.value("bytes_sent", 0.0);
    }
    if (app.results.is_object() && app.results.contains("multicast")) {
      all += app.results["multicast"].value("bytes", 0.0);
    }
  }
  return all > 0 ? (all - contributions) / all : 0.0;
}

Result<TimesliceRun> run_timeslice_point(const TimesliceOptions& o, const TimesliceShape& s,
                                         const std::string& name, const std::string& what,
                                         BenchEnv& env) {
  ClusterSettings cluster = o.cluster;
  cluster.output_dir = point_dir(env, name);
  cluster.max_message_size = message_size_for(timeslice_contribution_wire_bytes(s));
  auto summary = run_point(timeslice_yaml(cluster, s), name, o.duration_s, env);
  if (!summary) return summary.error().context(what);
  TimesliceRun out;
  for (int k = 0; k < s.n; ++k) {
    const auto id = fmt::format("tb{}", k);
    runtime::ParamReader r(app_results(*summary, id), "ts_builder " + id, "result");
    const auto mb_s = r.get<double>("mb_per_s");
    const auto per_s = r.get<double>("timeslices_per_s");
    const auto rejected = r.get<std::uint64_t>("contributions_rejected");
    const auto malformed = r.get<std::uint64_t>("messages_malformed");
    const auto incomplete = r.get<std::uint64_t>("timeslices_incomplete");
    const auto turns = r.get<double>("turns_given");
    if (auto read = r.status(); !read) return read.error().context(what);
    if (rejected != 0 || malformed != 0) {
      return Error(fmt::format("{}: builder {} rejected {} contributions and {} messages (see {})",
                               what, id, rejected, malformed, cluster.output_dir));
    }
    if (mb_s <= 0) {
      return Error(fmt::format("{}: builder {} completed no timeslice (see {})", what, id,
                               cluster.output_dir));
    }
    if (s.order == "scheduled" && s.slot_us == 0 && turns > 0) {
      out.slot_us += o.duration_s * 1e6 / turns / s.n;
    }
    out.per_builder_mb_s += mb_s / s.n;
    out.timeslices_per_s += per_s;
    out.incomplete += incomplete;
  }
  if (s.order == "scheduled" && s.slot_us > 0) {
    runtime::ParamReader r(app_results(*summary, "clock"), "clock_master clock", "result");
    out.clock_precision_ns = r.get<double>("clock_precision_ns");
    if (auto read = r.status(); !read) return read.error().context(what);
    out.slot_us = s.slot_us;
  }
  out.control_pct = 100 * control_share(*summary);
  return out;
}

// The clocks alone, for their precision without data beside them.
Result<double> run_clock_point(const TimesliceOptions& o, const std::string& name,
                               const std::string& what, BenchEnv& env) {
  TimesliceShape s = o.shape;
  s.clock_only = true;
  ClusterSettings cluster = o.cluster;
  cluster.output_dir = point_dir(env, name);
  // The fit's window (50 rounds of 50 ms) fills in 2.5 s.
  auto summary = run_point(timeslice_yaml(cluster, s), name, std::max(o.duration_s, 4.0), env);
  if (!summary) return summary.error().context(what);
  runtime::ParamReader r(app_results(*summary, "clock"), "clock_master clock", "result");
  const auto precision = r.get<double>("clock_precision_ns");
  if (auto read = r.status(); !read) return read.error().context(what);
  return precision;
}

}  // namespace

std::string command_line(const TimesliceOptions& o) {
  return fmt::format(
      "daqflow bench timeslice --transport {} --n {} --sizes {} --microslices {} --crc {} "
      "--slot-us {:g} --depth {} --duration {:g} --rounds {} --idle {} --port-base {}{}",
      o.cluster.transport, o.shape.n, format_sweep(o.sizes), o.shape.microslices,
      o.shape.crc ? "true" : "false", o.slot_us, o.cluster.pipeline_depth, o.duration_s, o.rounds,
      o.cluster.idle, o.cluster.port_base, cluster_options(o.cluster));
}

namespace {

using RatesByKind = std::map<std::string, std::map<std::uint64_t, std::vector<double>>>;
// Per kind and size: the medians' figures and the control shares of the rounds.
struct RoundFigures {
  RatesByKind rates;
  RatesByKind control;
};
constexpr const char* kRunKinds[] = {"stream", "chaotic", "scheduled"};

// The result set of a time-slice sweep before its rows: its name, parameters and columns.
ResultSet timeslice_result_set(const TimesliceOptions& o) {
  ResultSet r = cluster_result_set("timeslice",
                                   fmt::format("timeslice-{}-n{}", o.cluster.transport, o.shape.n),
                                   o.cluster, command_line(o));
  r.params.update(
      nlohmann::json{{"n", o.shape.n},
                     {"sizes", o.sizes},
                     {"microslices", o.shape.microslices},
                     {"crc", o.shape.crc},
                     {"slot_us", o.slot_us},
                     {"depth", o.cluster.pipeline_depth},
                     {"in_flight", o.shape.in_flight},  // 0: the inputs' automatic window
                     {"duration_s", o.duration_s},
                     {"rounds", o.rounds},
                     {"output", "discard"}});
  r.columns = {"contribution_bytes",
               "wire_bytes",
               "round",
               "run",
               "slot_us",
               "mb_s_per_node",
               "per_s",
               "incomplete",
               "clock_precision_ns",
               "control_pct"};
  return r;
}

// Per size, the median of each kind of run and the ratios to the stream's; each kind's medians
// become a series of the plot.
nlohmann::json medians_by_size(const TimesliceOptions& o, RoundFigures& figures, Plot& plot,
                               const BenchEnv& env) {
  RatesByKind& rates = figures.rates;
  nlohmann::json by_size = nlohmann::json::array();
  for (const std::uint64_t size : o.sizes) {
    const double stream = median(rates["stream"][size]);
    const double chaotic = median(rates["chaotic"][size]);
    const double scheduled = median(rates["scheduled"][size]);
    const auto ratio = [&](double x) { return stream > 0 ? x / stream : 0.0; };
    by_size.push_back({{"contribution_bytes", size},
                       {"stream_mb_s", stream},
                       {"chaotic_mb_s", chaotic},
                       {"scheduled_mb_s", scheduled},
                       {"chaotic_to_stream", ratio(chaotic)},
                       {"scheduled_to_stream", ratio(scheduled)},
                       {"chaotic_control_pct", median(figures.control["chaotic"][size])},
                       {"scheduled_control_pct", median(figures.control["scheduled"][size])}});
    if (env.progress != nullptr) {
      env.progress->line(fmt::format(
          "{} B medians: stream {:.1f}, chaotic {:.1f} ({:.3f}), scheduled {:.1f} ({:.3f}) MB/s "
          "per node",
          size, stream, chaotic, ratio(chaotic), scheduled, ratio(scheduled)));
    }
    for (const char* kind : kRunKinds) {
      auto& series = plot.series;
      auto it = std::find_if(series.begin(), series.end(),
                             [&](const Series& x) { return x.name == kind; });
      if (it == series.end()) {
        series.push_back(Series{kind, {}, Series::Style::points_and_line});
        it = series.end() - 1;
      }
      it->points.emplace_back(static_cast<double>(size), median(rates[kind][size]));
    }
  }
  return by_size;
}

}  // namespace

Result<BenchOutput> run_timeslice(const TimesliceOptions& o, BenchEnv& env) {
  if (auto ok = check_transport(o.cluster.transport); !ok) return ok.error();
  if (o.sizes.empty()) return Error("timeslice: --sizes needs at least one value");
  BenchOutput out;
  ResultSet& r = out.result;
  r = timeslice_result_set(o);

  // Medians per size, by run kind; the plot has one series per kind.
  RoundFigures figures;
  RatesByKind& rates = figures.rates;
  std::vector<double> precisions;
  const int total = o.rounds * static_cast<int>(o.sizes.size()) * 3;  // and the clocks alone
  int done = 0;
  for (const std::uint64_t size : o.sizes) {
    for (int round = 1; round <= o.rounds; ++round) {
      TimesliceShape s = o.shape;
      s.contribution_bytes = size;
      const std::uint64_t wire = timeslice_contribution_wire_bytes(s);
      double stream_mb_s = 0;
      for (const char* kind : kRunKinds) {
        const std::string what = fmt::format("timeslice {} {}x{} {} B {} round {}",
                                             o.cluster.transport, s.n, s.n, size, kind, round);
        if (env.progress != nullptr) env.progress->begin(++done, total + 1, what);
        const std::string name = fmt::format("{}-{}-{}-{}", r.stem, size, kind, round);
        double mb_s = 0;
        double per_s = 0;
        std::uint64_t incomplete = 0;
        double precision = -1;
        double slot_us = 0;
        double control = 0;
        if (std::string(kind) == "stream") {
          auto run = run_stream_point(o, s, name, what, env);
          if (!run) return run.error();
          mb_s = stream_mb_s = run->per_receiver_mb_s;
          per_s = run->messages_per_s;
        } else {
          s.order = kind;
          // Scheduled: in the builders' turns (or in fixed slots of --slot-us).
          s.slot_us = o.slot_us;
          auto run = run_timeslice_point(o, s, name, what, env);
          if (!run) return run.error();
          slot_us = run->slot_us;
          mb_s = run->per_builder_mb_s;
          per_s = run->timeslices_per_s;
          incomplete = run->incomplete;
          precision = run->clock_precision_ns;
          if (precision >= 0) precisions.push_back(precision);
          control = run->control_pct;
          figures.control[kind][size].push_back(control);
        }
        add_row(r, {size, wire, round, kind, slot_us, mb_s, per_s, incomplete, precision, control});
        rates[kind][size].push_back(mb_s);
        if (env.progress != nullptr) {
          env.progress->line(fmt::format(
              "{}: {:.1f} MB/s per node{}{}{}", what, mb_s,
              slot_us > 0 ? fmt::format(", slot {:.1f} us", slot_us) : "",
              control > 0 ? fmt::format(", control {:.3f}% of the bytes", control) : "",
              precision >= 0 ? fmt::format(", clock precision {:.0f} ns", precision) : ""));
        }
      }
    }
  }

  const nlohmann::json by_size = medians_by_size(o, figures, out.plot, env);
  const std::string what = fmt::format("timeslice {} clocks alone", o.cluster.transport);
  if (env.progress != nullptr) env.progress->begin(total + 1, total + 1, what);
  auto quiet = run_clock_point(o, r.stem + "-clock", what, env);
  if (!quiet) return quiet.error();
  add_row(r, {0, 0, 1, "clock", 0, 0, 0, 0, *quiet, 0});
  r.summary = {{"sizes", by_size}, {"clock_precision_ns_quiet", *quiet}};
  if (env.progress != nullptr) {
    env.progress->line(fmt::format("clock precision: {:.0f} ns with no data", *quiet));
  }
  if (!precisions.empty()) {  // scheduled in fixed slots, on the clocks
    r.summary["clock_precision_ns_median"] = median(precisions);
    r.summary["clock_precision_ns_max"] = *std::max_element(precisions.begin(), precisions.end());
    if (env.progress != nullptr) {
      env.progress->line(fmt::format("clock precision: median {:.0f} ns during the scheduled runs",
                                     median(precisions)));
    }
  }
  out.plot.title =
      fmt::format("Time-slice building {}x{} over {}", o.shape.n, o.shape.n, o.cluster.transport);
  out.plot.x_label = "contribution size (bytes)";
  out.plot.y_label = "receive rate per node (MB/s = bytes/us)";
  out.plot.log_x = true;
  return out;
}

}  // namespace daqflow::bench
