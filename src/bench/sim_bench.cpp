// daqflow bench sim: the event builders swept to experiment scale in simulation. Every point is a
// `daqflow sim` of a generated builder in a child process of its own (SimGrid runs one simulation
// per process); its summary gives the figures.
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <thread>

#include "cluster_run.hpp"
#include "daqflow/bench/runners.hpp"
#include "daqflow/control/process.hpp"

namespace daqflow::bench {

// The options of a sweep, every one under its own name, in its result file.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(SimBenchOptions, kinds, nodes, events_per_request,
                                   blocks_in_flight, feds_per_ru, fragment, event_size,
                                   trigger_rate_hz, contribution, ts_manager, platform, link_gbps,
                                   latency_us, cores, leaf_hosts, spines, oversubscription,
                                   duration_s, cpu, round_ns, send_message_ns, send_byte_ns,
                                   recv_message_ns, recv_byte_ns, payload_scale, control_scale,
                                   network, simgrid_config, point_timeout_s)

namespace {

struct Point {
  std::string kind;  // evb, rubu, ts-chaotic, ts-scheduled
  std::uint64_t nodes = 0;
  std::uint64_t events_per_request = 0;
  std::uint64_t blocks_in_flight = 0;
  [[nodiscard]] bool timeslices() const { return kind.starts_with("ts-"); }
  // Every node both sends and builds, or half of them each.
  [[nodiscard]] bool all_to_all() const { return kind != "evb"; }
  // Readout units (time-slice inputs) and builder units (time-slice builders).
  [[nodiscard]] int rus() const { return all_to_all() ? int(nodes) : int(nodes / 2); }
  [[nodiscard]] int bus() const { return all_to_all() ? int(nodes) : int(nodes - nodes / 2); }
  [[nodiscard]] std::string name() const {
    if (timeslices()) return fmt::format("sim-{}{}", kind, nodes);
    return fmt::format("sim-{}{}-epr{}-bif{}", kind, nodes, events_per_request, blocks_in_flight);
  }
};

std::string num(double v) {
  return fmt::format("{:g}", v);
}

// The mean FED fragment a point simulates: the option's, or the event size over every FED.
std::uint64_t fragment_of(const SimBenchOptions& o, const Point& p) {
  if (o.event_size == 0) return o.fragment;
  const std::uint64_t feds = std::uint64_t(p.rus()) * std::uint64_t(o.feds_per_ru);
  return std::max<std::uint64_t>(64, o.event_size / feds / 8 * 8);
}

// A RU's readout memory: chunks of twice a block's largest part (at least 1 MiB), as many as the
// BUs' windows need (below), within limits: a thousand simulated RUs share this machine's memory.
// A RU with less than the BUs could ask for throttles the builder, as a real one would.
struct Memory {
  std::uint64_t chunk_size = 0;
  std::uint64_t chunks = 0;
};
Memory ru_memory(const SimBenchOptions& o, const Point& p) {
  // What is carried: fragments over the payload scale (as daqflow sim generates them).
  const std::uint64_t fragment = phantom_fragment(fragment_of(o, p), o.payload_scale);
  const std::uint64_t event_part = std::uint64_t(o.feds_per_ru) * fragment;
  const std::uint64_t block_max =
      p.events_per_request * std::uint64_t(o.feds_per_ru) * evb_fragment_max(fragment);
  // A RU produces up to twice what the BUs can have assigned ahead of the last assigned event,
  // and keeps what they have not yet acknowledged: four times the BUs' windows leaves room for
  // chunks that wait for their last event. At most 64 MiB each and 4 GiB for all the RUs.
  const std::uint64_t windows =
      std::uint64_t(p.bus()) * p.blocks_in_flight * p.events_per_request * event_part;
  const std::uint64_t cap =
      std::min<std::uint64_t>(std::uint64_t{64} << 20, (std::uint64_t{4} << 30) / p.rus());
  Memory m;
  // Chunks of at least 1 MiB, or of an eighth of the cap where that is less (above 512 RUs).
  m.chunk_size = std::max<std::uint64_t>(std::min<std::uint64_t>(std::uint64_t{1} << 20, cap / 8),
                                         std::bit_ceil(2 * block_max));
  const std::uint64_t want =
      std::clamp<std::uint64_t>(4 * windows, std::min<std::uint64_t>(8u << 20, cap), cap);
  m.chunks = std::max<std::uint64_t>(8, (want + m.chunk_size - 1) / m.chunk_size);
  return m;
}

std::vector<std::string> sim_argv(const SimBenchOptions& o, const Point& p, const std::string& self,
                                  const std::string& summary) {
  std::vector<std::string> a{self, "sim"};
  if (p.timeslices()) {
    a.insert(a.end(), {"--ts", std::to_string(p.nodes), "--order", p.kind.substr(3),
                       "--contribution", std::to_string(o.contribution)});
    if (o.ts_manager) a.emplace_back("--manager");
  } else if (p.kind == "rubu") {
    a.insert(a.end(), {"--rubu", std::to_string(p.nodes)});
  } else {
    a.insert(a.end(), {"--rus", std::to_string(p.rus()), "--bus", std::to_string(p.bus())});
  }
  if (!p.timeslices()) {
    a.insert(a.end(), {"--feds", std::to_string(o.feds_per_ru), "--fragment",
                       std::to_string(fragment_of(o, p)), "--events-per-request",
                       std::to_string(p.events_per_request), "--blocks-in-flight",
                       std::to_string(p.blocks_in_flight), "--trigger-rate", num(o.trigger_rate_hz),
                       "--chunk-size", std::to_string(ru_memory(o, p).chunk_size), "--chunks",
                       std::to_string(ru_memory(o, p).chunks)});
  }
  a.insert(a.end(), {"--platform",
                     o.platform,
                     "--link-gbps",
                     num(o.link_gbps),
                     "--latency-us",
                     num(o.latency_us),
                     "--cores",
                     std::to_string(o.cores),
                     "--duration",
                     num(o.duration_s),
                     "--cpu",
                     o.cpu,
                     "--round-ns",
                     num(o.round_ns),
                     "--send-message-ns",
                     num(o.send_message_ns),
                     "--send-byte-ns",
                     num(o.send_byte_ns),
                     "--recv-message-ns",
                     num(o.recv_message_ns),
                     "--recv-byte-ns",
                     num(o.recv_byte_ns),
                     "--payload-scale",
                     num(o.payload_scale),
                     "--control-scale",
                     num(o.control_scale),
                     "--network",
                     o.network,
                     "--summary",
                     summary});
  for (const auto& c : o.simgrid_config) a.insert(a.end(), {"--cfg", c});
  if (o.platform == "fat-tree") {
    a.insert(a.end(), {"--leaf-hosts", std::to_string(o.leaf_hosts), "--spines",
                       std::to_string(o.spines), "--oversubscription", num(o.oversubscription)});
  }
  return a;
}

double median_of(std::vector<double> v) {
  return median(std::move(v));
}

Result<nlohmann::json> run_one(const SimBenchOptions& o, const Point& p, BenchEnv& env) {
  const std::string dir = point_dir(env, p.name());
  const std::string summary_path = dir + "/summary.json";
  const std::string log = dir + "/sim.log";
  std::remove(summary_path.c_str());
  auto child = control::ChildProcess::spawn(sim_argv(o, p, env.self, summary_path), log);
  if (!child) return child.error().context(p.name());
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(o.point_timeout_s);
  std::optional<control::ExitStatus> ended;
  while (!(ended = child->wait_for(std::chrono::milliseconds(200)))) {
    if ((env.stop != nullptr && env.stop->load() > 0) ||
        std::chrono::steady_clock::now() > deadline) {
      child->kill_and_reap();
      return Error(fmt::format("{}: {} (log {})", p.name(),
                               env.stop != nullptr && env.stop->load() > 0
                                   ? "stopped"
                                   : "no end within the point timeout",
                               log));
    }
  }
  std::ifstream in(summary_path);
  nlohmann::json summary = nlohmann::json::parse(in, nullptr, false);
  if (!in || summary.is_discarded()) {
    return Error(fmt::format("{}: the simulation ended ({}) without a summary: {}", p.name(),
                             ended->str(), control::tail_of_file(log, 5)));
  }
  if (summary.value("status", std::string()) != "ok") {
    return Error(fmt::format("{}: the simulated run failed: {} (log {})", p.name(),
                             summary.value("failure", std::string("?")), log));
  }
  return summary;
}

// The row of a point: the simulated builder's figures and the simulator's.
nlohmann::json row_of(const SimBenchOptions& o, const Point& p, const nlohmann::json& s) {
  const nlohmann::json& r = s.at("results");
  const nlohmann::json& sim = s.at("simulation");
  // In the simulator's measuring window (the run's last 80%, from the BUs' counters): the
  // applications' own rates run into the halt's drain.
  const nlohmann::json& window = sim.at("window");
  const double rate = window.value("event_rate_hz", 0.0);
  const double per_bu = window.value("throughput_mb_s", 0.0) / p.bus();
  const double link_mb_s = o.link_gbps * 1e3 / 8;
  // What a BU's link carries of what it builds: everything, or where every node sends and builds
  // all but its own part.
  const double over_link =
      p.all_to_all() ? static_cast<double>(p.nodes - 1) / static_cast<double>(p.nodes) : 1.0;
  const double evm_load = window.at("cpu_load").value("evm0", 0.0);
  std::vector<double> p50;
  std::vector<double> p90;
  std::vector<double> p99;
  for (const auto& [id, app] : s.at("applications").items()) {
    if (app.value("type", std::string()) != "bu") continue;
    const auto it = app.find("results");
    if (it == app.end() || !it->contains("assembly_us")) continue;
    const auto& a = (*it)["assembly_us"];
    if (a.value("count", 0) == 0) continue;  // built nothing in the run
    p50.push_back(a.value("p50", 0.0));
    p90.push_back(a.value("p90", 0.0));
    p99.push_back(a.value("p99", 0.0));
  }
  const Memory m = p.timeslices() ? Memory{} : ru_memory(o, p);
  return nlohmann::json::array(
      {p.kind,
       p.nodes,
       p.rus(),
       p.bus(),
       p.events_per_request,
       p.blocks_in_flight,
       double(m.chunk_size * m.chunks) / double(1u << 20),
       rate,
       per_bu,
       per_bu * over_link / link_mb_s,
       evm_load,
       median_of(p50),
       median_of(p90),
       median_of(p99),
       r.value("events_built", r.value("timeslices_complete", std::uint64_t{0})),
       sim.value("simulated_s", 0.0),
       sim.value("wall_s", 0.0),
       sim.value("events_per_wall_s", 0.0),
       sim.value("rss_per_host_kb", 0.0),
       window.value("data_share", 0.0)});
}

}  // namespace

std::string command_line(const SimBenchOptions& o) {
  const auto join = [](const auto& v) {
    std::string out;
    for (const auto& x : v) out += (out.empty() ? "" : ",") + fmt::format("{}", x);
    return out;
  };
  std::string c = fmt::format(
      "daqflow bench sim --kind {} --nodes {} --events-per-request {} --blocks-in-flight {} "
      "--feds {} --fragment {} --event-size {} --trigger-rate {:g} --platform {} --link-gbps {:g} "
      "--latency-us {:g} --cores {} --duration {:g} --cpu {} --round-ns {:g} "
      "--send-message-ns {:g} --send-byte-ns {:g} --recv-message-ns {:g} --recv-byte-ns {:g} "
      "--payload-scale {:g} --control-scale {:g} --network {} --contribution {}{}",
      join(o.kinds), join(o.nodes), join(o.events_per_request), join(o.blocks_in_flight),
      o.feds_per_ru, o.fragment, o.event_size, o.trigger_rate_hz, o.platform, o.link_gbps,
      o.latency_us, o.cores, o.duration_s, o.cpu, o.round_ns, o.send_message_ns, o.send_byte_ns,
      o.recv_message_ns, o.recv_byte_ns, o.payload_scale, o.control_scale, o.network,
      o.contribution, o.ts_manager ? " --manager" : "");
  for (const auto& cfg : o.simgrid_config) c += " --cfg " + cfg;
  if (o.platform == "fat-tree") {
    c += fmt::format(" --leaf-hosts {} --spines {} --oversubscription {:g}", o.leaf_hosts, o.spines,
                     o.oversubscription);
  }
  return c;
}

namespace {

// The points of the sweep: every kind, node count, events per request and blocks in flight.
Result<std::vector<Point>> sim_points(const SimBenchOptions& o) {
  for (const auto& k : o.kinds) {
    if (k != "evb" && k != "rubu" && k != "ts-chaotic" && k != "ts-scheduled") {
      return Error("--kind: evb, rubu, ts-chaotic or ts-scheduled, not '" + k + "'");
    }
  }
  std::vector<Point> points;
  for (const auto& kind : o.kinds) {
    for (const auto n : o.nodes) {
      if (n < 4) return Error(fmt::format("--nodes: at least 4, not {}", n));
      if (kind.starts_with("ts-")) {
        points.push_back({kind, n, 0, 0});  // no requests, no blocks
        continue;
      }
      for (const auto epr : o.events_per_request) {
        for (const auto bif : o.blocks_in_flight) points.push_back({kind, n, epr, bif});
      }
    }
  }
  return points;
}

// The result set of the sweep before its rows: its name, parameters and columns.
ResultSet sim_result_set(const SimBenchOptions& o) {
  ResultSet r;
  r.bench = "sim";
  r.transport = "sim";
  const auto swept = [](const auto& v, const char* what) {
    return v.size() > 1 ? std::string("-") + what : std::string();
  };
  // "sim-star-nodes", "sim-star-100000hz-nodes" (a rate-limited trigger), "sim-star-epr-bif",
  // "sim-star-fifo-nodes" (the fifo network model), "sim-star-ts-nodes" (time-slice kinds only).
  const bool ts_only = std::all_of(o.kinds.begin(), o.kinds.end(),
                                   [](const std::string& k) { return k.starts_with("ts-"); });
  // "-control" when control messages are scaled (--control-scale).
  r.stem = fmt::format(
      "sim-{}{}{}{}{}{}{}{}", o.platform, o.network == "flow" ? "" : "-" + o.network,
      ts_only ? (o.ts_manager ? "-ts-manager" : "-ts") : "", o.control_scale > 1 ? "-control" : "",
      o.trigger_rate_hz > 0 ? fmt::format("-{:g}hz", o.trigger_rate_hz) : "",
      swept(o.nodes, "nodes"), swept(o.events_per_request, "epr"),
      swept(o.blocks_in_flight, "bif"));
  r.command = command_line(o);
  r.params = o;
  r.columns = {"kind",
               "nodes",
               "rus",
               "bus",
               "events_per_request",
               "blocks_in_flight",
               "ru_memory_mib",
               "event_rate_hz",
               "throughput_per_bu_mb_s",
               "link_share",
               "evm_cpu_load",
               "assembly_p50_us",
               "assembly_p90_us",
               "assembly_p99_us",
               "events_built",
               "simulated_s",
               "wall_s",
               "events_per_wall_s",
               "rss_per_host_kb",
               "data_share"};
  return r;
}

}  // namespace

Result<BenchOutput> run_sim_bench(const SimBenchOptions& o, BenchEnv& env) {
  auto points = sim_points(o);
  if (!points) return points.error();
  BenchOutput out;
  ResultSet& r = out.result;
  r = sim_result_set(o);
  std::map<std::string, Series> series;
  for (const Point& p : *points) {
    std::printf("  %s ...\n", p.name().c_str());
    std::fflush(stdout);
    auto summary = run_one(o, p, env);
    if (!summary) return summary.error();
    nlohmann::json row = row_of(o, p, *summary);
    std::printf("  %s: %.0f Hz, %.0f MB/s per BU, %.1f s wall\n", p.name().c_str(),
                row[7].get<double>(), row[8].get<double>(), row[16].get<double>());
    // Over the node counts; or, for one node count, over the events per request.
    const bool by_nodes = p.timeslices() || o.nodes.size() > 1 || o.events_per_request.size() == 1;
    const std::string label =
        p.timeslices() ? fmt::format("{}, {} B contributions{}", p.kind, o.contribution,
                                     o.ts_manager ? ", manager" : "")
        : by_nodes     ? fmt::format("{}, {} events/request, {} in flight", p.kind,
                                     p.events_per_request, p.blocks_in_flight)
                   : fmt::format("{} {}, {} blocks in flight", p.kind, p.nodes, p.blocks_in_flight);
    series[label].name = label;
    series[label].points.emplace_back(by_nodes ? double(p.nodes) : double(p.events_per_request),
                                      row[8].get<double>());
    add_row(r, std::move(row));
  }
  out.plot.title =
      fmt::format("Simulated builders, {} Gb/s links ({})", num(o.link_gbps), o.platform);
  out.plot.x_label =
      o.nodes.size() > 1 || o.events_per_request.size() == 1 ? "nodes" : "events per request";
  out.plot.y_label = "throughput per builder node, MB/s";
  out.plot.log_x = true;
  for (auto& [label, s] : series) out.plot.series.push_back(std::move(s));
  r.summary = {{"points", points->size()}};
  return out;
}

}  // namespace daqflow::bench
