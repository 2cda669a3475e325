// daqflow bench compare: a daqflow figure between two runs of its reference tool
// (docs/benchmarks.md), as a ratio.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <vector>

#include "daqflow/bench/references.hpp"
#include "daqflow/bench/runners.hpp"

namespace daqflow::bench {

namespace {

std::uint64_t compare_size(const CompareOptions& o) {
  if (o.size != 0) return o.size;
  return o.kind == "latency" ? 64 : 1u << 20;
}

// The port of each tool inside the reference range (iperf3 11900, sockperf 11901, ...).
int tool_port(const CompareOptions& o, const std::string& tool) {
  if (tool == "sockperf") return o.reference_port + 1;
  if (tool == "ucx_perftest") return o.reference_port + 2;
  if (tool == "fabtests") return o.reference_port + 3;
  if (tool == "zeromq") return o.reference_port + 4;
  if (tool == "ucp_am_bw") return o.reference_port + 5;
  return o.reference_port;
}

struct DaqflowFigure {
  double value = 0;
  std::string stem;
  std::string command;
};

// round: 0 when there is one round (the stem stays the plain one), else 1, 2, ...
Result<DaqflowFigure> daqflow_figure(const CompareOptions& o, const std::string& statistic,
                                     int round, BenchEnv& env) {
  const std::uint64_t size = compare_size(o);
  BenchOutput sub;
  double value = 0;
  if (o.kind == "latency") {
    RoundtripOptions rt;
    rt.cluster = o.cluster;
    rt.shape.min_size = size;
    rt.shape.max_size = size;
    rt.shape.iterations = o.iterations;
    rt.shape.warmup = std::max<std::uint64_t>(100, o.iterations / 10);
    auto out = run_roundtrip(rt, env);
    if (!out) return out.error();
    sub = std::move(*out);
    const auto& row = sub.result.rows.at(0);  // message_size, rtt_min_us, rtt_median_us, ...
    value = row.at(statistic == "median" ? 2 : 1).get<double>();
  } else {
    StreamOptions st;
    st.cluster = o.cluster;
    st.pattern = "1to1";
    st.sizes = {size};
    st.depths = {o.cluster.pipeline_depth};
    st.duration_s = o.duration_s;
    st.verify = o.verify;
    auto out = run_stream(st, env);
    if (!out) return out.error();
    sub = std::move(*out);
    value = sub.result.summary.at("mb_s_total_mean").get<double>();
  }
  if (round > 0) sub.result.stem += fmt::format("-round{}", round);
  auto written = write_result_files(env.out_dir, sub.result, sub.plot);
  if (!written) return written.error();
  return DaqflowFigure{value, sub.result.stem, sub.result.command};
}

}  // namespace

std::string compare_stem(const CompareOptions& o) {
  const bool plain = o.reference.empty() && o.reference_buffers == 1 && !o.reference_err_handling;
  if (plain) return fmt::format("compare-{}-{}-{}", o.kind, o.cluster.transport, compare_size(o));
  // The options that name a tool imply it when --reference does not (mpi_bw's buffers,
  // ucx_perftest's error handling).
  const std::string tool = !o.reference.empty()       ? o.reference
                           : o.reference_buffers != 1 ? "mpi_bw"
                                                      : "ucx_perftest";
  std::string stem = fmt::format("compare-{}-{}-{}", o.kind, o.cluster.transport, tool);
  if (o.reference_buffers != 1) stem += fmt::format("-{}buffers", o.reference_buffers);
  if (o.reference_err_handling) stem += "-e";
  return stem + fmt::format("-{}", compare_size(o));
}

std::string command_line(const CompareOptions& o) {
  std::string cmd = fmt::format(
      "daqflow bench compare --transport {} --kind {} --size {} --duration {:g} --depth {} "
      "--idle {} --port-base {} --reference-port {}",
      o.cluster.transport, o.kind, compare_size(o), o.duration_s, o.cluster.pipeline_depth,
      o.cluster.idle, o.cluster.port_base, o.reference_port);
  if (o.kind == "latency") cmd += fmt::format(" --iterations {}", o.iterations);
  if (!o.reference.empty()) cmd += " --reference " + o.reference;
  if (o.reference_buffers != 1) cmd += fmt::format(" --reference-buffers {}", o.reference_buffers);
  if (o.reference_err_handling) cmd += " --reference-err-handling";
  if (o.kind == "stream" && o.verify != "ends") cmd += " --verify " + o.verify;
  if (o.rounds != 1) cmd += fmt::format(" --rounds {}", o.rounds);
  cmd += cluster_options(o.cluster);
  if (o.cluster.cpus.empty()) cmd += " --cpus none";  // the default would pin
  return cmd;
}

namespace {

// The reference tool of the comparison, with the options that apply to it checked.
Result<std::string> compare_tool(const CompareOptions& o) {
  auto tool = o.reference.empty() ? reference_tool(o.cluster.transport, o.kind)
                                  : Result<std::string>(o.reference);
  if (!tool) return tool.error();
  if (o.reference_buffers != 1 && *tool != "mpi_bw" && *tool != "ucp_am_bw") {
    return Error("bench compare: --reference-buffers is for mpi_bw and ucp_am_bw, not " + *tool);
  }
  if (o.reference_err_handling && *tool != "ucx_perftest" && *tool != "ucp_am_bw") {
    return Error("bench compare: --reference-err-handling is for ucx_perftest and ucp_am_bw, not " +
                 *tool);
  }
  if (!o.cluster.cpus.empty() && o.kind != "memcpy") {
    if (o.cluster.cpus.size() != 2) {
      return Error(fmt::format("bench compare: --cpus takes two CPUs (sender, receiver), not {}",
                               o.cluster.cpus.size()));
    }
    if (*tool == "mpi_bw") {
      return Error(
          "bench compare: --cpus does not apply to mpi: its ranks are placed by mpirun, with the "
          "same options for daqflow and mpi_bw (DAQFLOW_MPIRUN_ARGS); use --cpus none");
    }
  }
  return tool;
}

// How the reference tool is run: the same size, depth, CPUs and duration as daqflow's figure.
ReferenceSpec reference_spec(const CompareOptions& o, const std::string& tool, std::uint64_t size,
                             const BenchEnv& env) {
  ReferenceSpec spec;
  spec.transport = o.cluster.transport;
  spec.kind = o.kind;
  spec.size = size;
  spec.duration_s = o.duration_s;
  spec.port = tool_port(o, tool);
  spec.ucx_tls = o.cluster.ucx_tls;
  spec.ofi_provider = o.cluster.ofi_provider;
  spec.bin_dir = std::filesystem::path(env.self).parent_path().string();
  spec.log_dir = (std::filesystem::path(env.out_dir) / "runs" / compare_stem(o)).string();
  spec.tool = tool;
  spec.buffers = o.reference_buffers;
  spec.err_handling = o.reference_err_handling;
  spec.depth = static_cast<int>(o.cluster.pipeline_depth);
  if (o.kind != "memcpy") spec.cpus = o.cluster.cpus;
  return spec;
}

nlohmann::json compare_params(const CompareOptions& o, const std::string& tool, std::uint64_t size,
                              int port) {
  const bool latency = o.kind == "latency";
  nlohmann::json params = {{"transport", o.cluster.transport},
                           {"kind", o.kind},
                           {"size", size},
                           {"duration_s", o.duration_s},
                           {"depth", o.cluster.pipeline_depth},
                           {"idle", o.cluster.idle},
                           {"reference_port", port}};
  if (latency) params["iterations"] = o.iterations;
  params["reference_tool"] = tool;
  if (!latency) params["verify"] = o.verify;
  if (!o.cluster.ucx_tls.empty()) params["ucx_tls"] = o.cluster.ucx_tls;
  if (!o.cluster.ofi_provider.empty()) params["ofi_provider"] = o.cluster.ofi_provider;
  params["rounds"] = o.rounds;
  params["cpus"] = o.cluster.cpus;
  if (tool == "mpi_bw" || tool == "ucp_am_bw") {
    params["reference_buffers"] = o.reference_buffers;
  }
  if (tool == "ucx_perftest" || tool == "ucp_am_bw") {
    params["reference_err_handling"] = o.reference_err_handling;
  }
  return params;
}

// The measurements in the order they ran: the reference, then daqflow and the reference again
// each round.
Plot compare_plot(const CompareOptions& o, const std::string& transport,
                  const std::string& statistic, const std::vector<ReferenceResult>& refs,
                  const std::vector<DaqflowFigure>& mine) {
  const bool latency = o.kind == "latency";
  const ReferenceResult& before = refs.front();
  const std::uint64_t size = compare_size(o);
  Plot plot;
  plot.title =
      fmt::format("daqflow {} over {} against {}, {} B", o.kind, transport, before.tool, size);
  plot.x_label =
      "measurement, in the order run: the reference, then daqflow and the reference "
      "again each round";
  plot.y_label =
      latency ? fmt::format("{} round-trip time (us)", statistic) : std::string("bandwidth (MB/s)");
  Series reference_points{before.tool, {}, Series::Style::points};
  Series daqflow_points{"daqflow", {}, Series::Style::points};
  for (std::size_t i = 0; i < refs.size(); ++i) {
    reference_points.points.push_back({static_cast<double>(2 * i + 1), refs[i].value});
    if (i < mine.size()) {
      daqflow_points.points.push_back({static_cast<double>(2 * i + 2), mine[i].value});
    }
  }
  plot.series = {std::move(reference_points), std::move(daqflow_points)};
  return plot;
}

// The reference run, then each round's daqflow figure followed by another reference run: the
// reference's runs into refs, daqflow's into mine.
Result<void> measure_interleaved(const CompareOptions& o, const ReferenceSpec& spec, BenchEnv& env,
                                 std::vector<ReferenceResult>& refs,
                                 std::vector<DaqflowFigure>& mine) {
  const bool latency = o.kind == "latency";
  const auto reference = [&](const char* when) -> Result<ReferenceResult> {
    if (env.progress != nullptr) {
      env.progress->line(fmt::format("reference {} ({}), {} B", spec.tool, when, spec.size));
    }
    auto r = run_reference(spec);
    if (!r) return r.error().context(fmt::format("reference {} ({})", spec.tool, when));
    if (env.progress != nullptr) {
      env.progress->line(fmt::format("reference {} ({}): {:.2f} {}", r->tool, when, r->value,
                                     latency ? "us" : "MB/s"));
    }
    return r;
  };
  auto first = reference("before");
  if (!first) return first.error();
  refs.push_back(std::move(*first));
  const std::string statistic = latency ? refs.front().statistic : "";
  for (int round = 1; round <= o.rounds; ++round) {
    auto figure = daqflow_figure(o, statistic, o.rounds == 1 ? 0 : round, env);
    if (!figure) return figure.error().context("daqflow figure");
    mine.push_back(std::move(*figure));
    auto next = reference(round == o.rounds ? "after" : "between");
    if (!next) return next.error();
    refs.push_back(std::move(*next));
  }
  return ok();
}

}  // namespace

Result<BenchOutput> run_compare(const CompareOptions& o, BenchEnv& env) {
  if (auto ok = check_transport(o.cluster.transport); !ok) return ok.error();
  auto tool = compare_tool(o);
  if (!tool) return tool.error();
  const std::uint64_t size = compare_size(o);
  const bool latency = o.kind == "latency";

  const ReferenceSpec spec = reference_spec(o, *tool, size, env);
  if (o.rounds < 1) return Error("bench compare: --rounds must be at least 1");
  std::vector<ReferenceResult> refs;
  std::vector<DaqflowFigure> mine;
  if (auto measured = measure_interleaved(o, spec, env, refs, mine); !measured) {
    return measured.error();
  }
  const std::string statistic = latency ? refs.front().statistic : "";
  std::vector<double> ref_values;
  for (const auto& x : refs) ref_values.push_back(x.value);
  std::vector<double> my_values;
  for (const auto& x : mine) my_values.push_back(x.value);
  const double ref = median(ref_values);
  const double my = median(my_values);
  // The run whose figure is the median (for an even count, one of the middle two).
  const auto middle = static_cast<std::size_t>(
      std::min_element(my_values.begin(), my_values.end(),
                       [&](double a, double b) { return std::abs(a - my) < std::abs(b - my); }) -
      my_values.begin());
  const ReferenceResult& before = refs.front();
  const ReferenceResult& after = refs.back();
  const auto ratio_of = [latency](double mine_value, double ref_value) {
    return latency ? (mine_value > 0 ? ref_value / mine_value : 0)
                   : (ref_value > 0 ? mine_value / ref_value : 0);
  };
  const double ratio = ratio_of(my, ref);
  // Each round against the two reference runs around it: a machine whose speed drifts or jumps
  // during the comparison (a neighbour's load, a memory placement) moves both sides of a round
  // together, so the median of these is steadier than the ratio of the medians.
  std::vector<double> round_ratios;
  for (std::size_t i = 0; i < mine.size(); ++i) {
    round_ratios.push_back(ratio_of(my_values[i], (ref_values[i] + ref_values[i + 1]) / 2));
  }
  const double paired_ratio = median(round_ratios);
  BenchOutput out;
  ResultSet& r = out.result;
  r.bench = "compare";
  r.stem = compare_stem(o);
  r.transport = o.cluster.transport;
  r.command = command_line(o);
  r.params = compare_params(o, *tool, size, spec.port);
  r.columns = {"measurement", "value"};
  for (std::size_t i = 0; i < refs.size(); ++i) {
    const std::string label = i == 0                 ? "reference_before"
                              : i + 1 == refs.size() ? "reference_after"
                                                     : fmt::format("reference_{}", i + 1);
    add_row(r, {label, refs[i].value});
    if (i < mine.size()) {
      add_row(r, {o.rounds == 1 ? std::string("daqflow") : fmt::format("daqflow_{}", i + 1),
                  mine[i].value});
    }
  }

  nlohmann::json reference_json = {{"tool", before.tool},    {"command", before.command},
                                   {"before", before.value}, {"after", after.value},
                                   {"values", ref_values},   {"value", ref}};
  for (const auto& [key, v] : before.details) reference_json["before_" + key] = v;
  for (const auto& [key, v] : after.details) reference_json["after_" + key] = v;
  nlohmann::json stems = nlohmann::json::array();
  for (const auto& x : mine) stems.push_back(x.stem);
  r.summary = {{"kind", o.kind},
               {"size", size},
               {"unit", latency ? "us" : "MB/s"},
               {"better", latency ? "lower" : "higher"},
               {"rounds", o.rounds},
               {"daqflow",
                {{"value", my},
                 {"values", my_values},
                 {"stem", mine[middle].stem},
                 {"stems", stems},
                 {"command", mine[middle].command}}},
               {"reference", reference_json},
               {"ratio", ratio},
               {"round_ratios", round_ratios},
               {"paired_ratio", paired_ratio}};
  if (latency) {
    r.summary["statistic"] = statistic;  // which RTT statistic both sides give (min or median)
    r.summary["daqflow_over_reference"] = ref > 0 ? my / ref : 0;
  }
  out.plot = compare_plot(o, r.transport, statistic, refs, mine);
  return out;
}

}  // namespace daqflow::bench
