// daqflow sim [CONFIG] [--rus N --bus M | --rubu N] --platform star|FILE ...: runs a cluster
// configuration in one process on a simulated platform (docs/simulation.md).
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "daqflow/bench/configs.hpp"
#include "daqflow/runtime/config.hpp"
#include "daqflow/wire/timeslice.hpp"
#ifdef DAQFLOW_HAVE_SIMGRID
#include "daqflow/sim/simulation.hpp"
#endif

namespace daqflow::cli {

#ifdef DAQFLOW_HAVE_SIMGRID
namespace {

struct SimOptions {
  std::string config;
  int rus = 0;
  int bus = 0;
  int rubu = 0;
  int ts = 0;
  std::string order = "chaotic";
  std::uint64_t contribution = 65536;
  double slot_us = 0;
  bool ts_manager = false;
  int ts_in_flight = 0;
  int feds = 8;
  std::uint64_t fragment = 2048;
  std::uint32_t events_per_request = 32;
  std::uint32_t blocks_in_flight = 4;
  double trigger_rate = 0;
  std::uint64_t chunk_size = 0;
  std::uint32_t chunks = 0;
  std::string platform = "star";
  std::size_t hosts = 0;
  double link_gbps = 100;
  double latency_us = 1;
  int cores = 16;
  std::size_t leaf_hosts = 16;
  std::size_t spines = 4;
  double oversubscription = 1;
  double duration = 1;
  std::string cpu = "measured";
  double cpu_scale = 1;
  double round_ns = 1000;
  double send_message_ns = 0;
  double send_byte_ns = 0;
  double recv_message_ns = 0;
  double recv_byte_ns = 0;
  double payload_scale = 1;
  double control_scale = 1;
  std::string network = "flow";
  std::vector<std::string> kills;
  std::vector<std::string> simgrid_config;
  std::string summary;
};

// Time-slice building of --ts nodes (an input and a builder each), on the simulation's one clock.
Result<runtime::ClusterConfig> load_timeslices(const SimOptions& o) {
  if (o.order != "chaotic" && o.order != "scheduled") {
    return Error("--order: expected chaotic or scheduled, got '" + o.order + "'");
  }
  bench::TimesliceShape shape;
  shape.n = o.ts;
  shape.contribution_bytes = bench::phantom_fragment(o.contribution, o.payload_scale);
  shape.order = o.order;
  shape.crc = false;
  shape.clock_sync = false;
  shape.manager = o.ts_manager;
  // A timeslice is acknowledged once complete, after every input's turn: an input keeps about
  // as many as there are inputs in flight, or waits for acknowledgements with its link idle.
  // Scheduled, the acknowledgement waits for the input's next slot at the builder, up to one
  // more turn of the shifter: twice as many (as the applications' own window).
  const int window = o.ts + 8;
  shape.in_flight =
      o.ts_in_flight > 0 ? o.ts_in_flight : (o.order == "scheduled" ? 2 * window : window);
  // A slot: the time on a host's link of one contribution and of the acknowledgement that
  // goes back for it (as the network carries them: scaled for phantom payloads and control
  // traffic, with their headers), and 5% to spare. In every slot each host sends and receives
  // one of each: a slot without room for the acknowledgements lets the links fall behind.
  const double overhead = transport::SimOptions{}.overhead_bytes;
  const double wire_bytes =
      static_cast<double>(bench::timeslice_contribution_wire_bytes(shape)) * o.payload_scale +
      overhead + static_cast<double>(wire::kTsAckSize) * o.control_scale + overhead;
  shape.slot_us = o.slot_us > 0 ? o.slot_us : 1.05 * wire_bytes / (o.link_gbps * 1e3 / 8);
  bench::ClusterSettings cluster;
  cluster.transport = "tcp";  // any: the simulation puts every application on sim
  cluster.max_message_size = static_cast<std::uint32_t>(
      std::max<std::uint64_t>(1u << 20, 2 * bench::timeslice_contribution_wire_bytes(shape)));
  const std::string name = fmt::format("ts{}-{}.yaml", o.ts, o.order);
  return runtime::parse_config(bench::timeslice_yaml(cluster, shape), name, registry());
}

Result<runtime::ClusterConfig> load(const SimOptions& o) {
  if (!o.config.empty()) return runtime::load_config(o.config, registry());
  if (o.ts > 0) {
    if (o.rus > 0 || o.bus > 0 || o.rubu > 0) {
      return Error("--ts generates time-slice building: not with --rus, --bus or --rubu");
    }
    return load_timeslices(o);
  }
  bench::EvbShape shape;
  shape.rubu = o.rubu > 0;
  shape.rus = shape.rubu ? o.rubu : o.rus;
  shape.bus = shape.rubu ? o.rubu : o.bus;
  shape.feds_per_ru = o.feds;
  // Phantom payloads: fragments generated at a fraction of the size they stand for.
  shape.fragment_mean = bench::phantom_fragment(o.fragment, o.payload_scale);
  shape.events_per_request = o.events_per_request;
  shape.blocks_in_flight = o.blocks_in_flight;
  shape.trigger_rate_hz = o.trigger_rate;
  shape.chunk_size = o.chunk_size;
  shape.chunks = o.chunks;
  if (shape.rus < 1 || shape.bus < 1) {
    return Error("give a configuration file, or --rus and --bus (or --rubu) for an event builder");
  }
  bench::ClusterSettings cluster;
  cluster.transport = "tcp";  // any: the simulation puts every application on sim
  cluster.max_message_size = bench::evb_max_message_size(shape);
  const std::string name = shape.rubu ? fmt::format("rubu{}.yaml", shape.rus)
                                      : fmt::format("evb{}x{}.yaml", shape.rus, shape.bus);
  return runtime::parse_config(bench::evb_yaml(cluster, shape), name, registry());
}

Result<sim::SimSettings> settings(const SimOptions& o) {
  sim::SimSettings s;
  if (o.platform == "star") {
    s.platform.kind = sim::PlatformSpec::Kind::star;
  } else if (o.platform == "fat-tree") {
    s.platform.kind = sim::PlatformSpec::Kind::fat_tree;
  } else {
    s.platform.kind = sim::PlatformSpec::Kind::file;
    s.platform.file = o.platform;
  }
  s.platform.hosts = o.hosts;
  s.platform.link_bytes_s = o.link_gbps * 1e9 / 8;
  s.platform.link_latency_s = o.latency_us * 1e-6;
  s.platform.cores = o.cores;
  s.platform.leaf_hosts = o.leaf_hosts;
  s.platform.spines = o.spines;
  s.platform.oversubscription = o.oversubscription;
  s.duration_s = o.duration;
  if (o.cpu == "measured") {
    s.cpu = sim::CpuModel::measured;
  } else if (o.cpu == "fixed") {
    s.cpu = sim::CpuModel::fixed;
  } else {
    return Error("--cpu: expected measured or fixed, got '" + o.cpu + "'");
  }
  s.cpu_scale = o.cpu_scale;
  s.round_ns = o.round_ns;
  s.costs.send_message_ns = o.send_message_ns;
  s.costs.send_byte_ns = o.send_byte_ns;
  s.costs.recv_message_ns = o.recv_message_ns;
  s.costs.recv_byte_ns = o.recv_byte_ns;
  if (!(o.payload_scale >= 1)) return Error("--payload-scale: at least 1");
  s.costs.payload_scale = o.payload_scale;
  if (!(o.control_scale >= 1)) return Error("--control-scale: at least 1");
  s.costs.control_scale = o.control_scale;
  if (o.network == "flow") {
    s.costs.network = transport::SimOptions::Network::flow;
  } else if (o.network == "fifo") {
    s.costs.network = transport::SimOptions::Network::fifo;
  } else {
    return Error("--network: expected flow or fifo, got '" + o.network + "'");
  }
  for (const std::string& k : o.kills) {
    const auto at = k.find('@');
    if (at == std::string::npos || at == 0) {
      return Error("--kill: expected APP@SECONDS, got '" + k + "'");
    }
    try {
      s.kills.push_back({k.substr(0, at), std::stod(k.substr(at + 1))});
    } catch (const std::exception&) {
      return Error("--kill: expected APP@SECONDS, got '" + k + "'");
    }
  }
  s.simgrid_config = o.simgrid_config;
  return s;
}

int run_sim(const SimOptions& o) {
  auto config = load(o);
  if (!config) {
    fmt::print(stderr, "{}\n", config.error().message());
    return 2;
  }
  auto s = settings(o);
  if (!s) {
    fmt::print(stderr, "{}\n", s.error().message());
    return 2;
  }
  for (const sim::Kill& k : s->kills) {
    if (config->find_application(k.app) == nullptr) {
      fmt::print(stderr, "--kill: no application '{}' in {}\n", k.app, config->file);
      return 2;
    }
  }
  auto summary = sim::simulate(*config, registry(), *s);
  if (!summary) {
    fmt::print(stderr, "{}\n", summary.error().message());
    return 2;
  }
  const std::string text = summary->dump(2);
  if (!o.summary.empty()) {
    std::ofstream(o.summary) << text << "\n";
  }
  fmt::print("{}\n", text);
  return (*summary)["status"] == "ok" ? 0 : 1;
}

// The generated platform: its shape, links and hosts.
void add_platform_options(CLI::App* cmd, SimOptions& o) {
  cmd->add_option("--platform", o.platform,
                  "star (generated: each host on its own link to one switch), fat-tree "
                  "(generated: leaf and spine switches) or a SimGrid platform file whose host "
                  "names are the contexts' hosts")
      ->capture_default_str();
  cmd->add_option("--hosts", o.hosts, "Generated platform: hosts (0: one per context)")
      ->capture_default_str();
  cmd->add_option("--link-gbps", o.link_gbps, "Generated platform: each host's link, Gb/s")
      ->capture_default_str();
  cmd->add_option("--latency-us", o.latency_us, "Generated platform: link latency, us")
      ->capture_default_str();
  cmd->add_option("--cores", o.cores, "Generated platform: cores per host")->capture_default_str();
  cmd->add_option("--leaf-hosts", o.leaf_hosts, "fat-tree: hosts per leaf switch")
      ->capture_default_str();
  cmd->add_option("--spines", o.spines, "fat-tree: spine switches")->capture_default_str();
  cmd->add_option("--oversubscription", o.oversubscription,
                  "fat-tree: a leaf's host links over its uplinks (1: non-blocking)")
      ->capture_default_str();
}

// What work costs on the simulated hosts and how the network shares its links.
void add_cost_options(CLI::App* cmd, SimOptions& o) {
  cmd->add_option("--cpu", o.cpu,
                  "measured: charge each round of an application's work the CPU time it took "
                  "here; fixed: --round-ns per round (reproducible)")
      ->capture_default_str();
  cmd->add_option("--cpu-scale", o.cpu_scale, "measured: simulated CPU time per CPU time here")
      ->capture_default_str();
  cmd->add_option("--round-ns", o.round_ns, "fixed: CPU time of a round that did work")
      ->capture_default_str();
  cmd->add_option("--send-message-ns", o.send_message_ns,
                  "CPU time the transport takes per message sent")
      ->capture_default_str();
  cmd->add_option("--send-byte-ns", o.send_byte_ns, "... per byte sent")->capture_default_str();
  cmd->add_option("--recv-message-ns", o.recv_message_ns, "... per message received")
      ->capture_default_str();
  cmd->add_option("--recv-byte-ns", o.recv_byte_ns, "... per byte received")->capture_default_str();
  cmd->add_option("--payload-scale", o.payload_scale,
                  "Phantom payloads: a payload byte stands for this many on the wire and in the "
                  "byte costs; generated fragments are --fragment over it (at least 64 B), and the "
                  "byte figures of the summary are scaled back")
      ->capture_default_str();
  cmd->add_option("--control-scale", o.control_scale,
                  "A control message's payload byte (requests, assignments, acknowledgements) "
                  "stands for this many on the wire and in the byte costs: control traffic of a "
                  "chosen share (the summary's window.data_share)")
      ->capture_default_str();
  cmd->add_option("--network", o.network,
                  "flow: SimGrid's network model, transfers sharing the links' bandwidth; fifo: "
                  "each link sends one message after the other, first come first served (a "
                  "timer per message: for a thousand nodes)")
      ->check(CLI::IsMember({"flow", "fifo"}))
      ->capture_default_str();
}

}  // namespace

void add_sim(CLI::App& app) {
  auto o = std::make_shared<SimOptions>();
  CLI::App* cmd = app.add_subcommand(
      "sim", "Run a configuration in one process on a simulated platform (SimGrid)");
  cmd->add_option("CONFIG", o->config, "Cluster configuration (YAML); or generate one below");
  cmd->add_option("--rus", o->rus, "Generate an event builder: readout units, the EVM included");
  cmd->add_option("--bus", o->bus, "Generate an event builder: builder units");
  cmd->add_option("--rubu", o->rubu, "Generate a single-stage event builder of N nodes");
  cmd->add_option("--ts", o->ts,
                  "Generate time-slice building of N nodes, an input and a builder each");
  cmd->add_option("--order", o->order, "--ts: chaotic or scheduled (slots of the one clock)")
      ->capture_default_str();
  cmd->add_option("--contribution", o->contribution, "--ts: bytes of an input's contribution")
      ->capture_default_str();
  cmd->add_option(
         "--slot-us", o->slot_us,
         "--ts scheduled: slot length, us (0: the time on a link of a contribution and its "
         "acknowledgement, +5%)")
      ->capture_default_str();
  cmd->add_flag("--manager", o->ts_manager,
                "--ts: a ts_manager assigns the timeslices and grants their writes (control "
                "traffic with every input and builder); without: round robin");
  cmd->add_option("--in-flight", o->ts_in_flight,
                  "--ts: timeslices an input keeps until acknowledged (0: the nodes + 8, "
                  "scheduled twice that)")
      ->capture_default_str();
  cmd->add_option("--feds", o->feds, "Generated: FEDs per readout unit")->capture_default_str();
  cmd->add_option("--fragment", o->fragment, "Generated: mean FED fragment size in bytes")
      ->capture_default_str();
  cmd->add_option("--events-per-request", o->events_per_request, "Generated: events per block")
      ->capture_default_str();
  cmd->add_option("--blocks-in-flight", o->blocks_in_flight, "Generated: blocks per BU at once")
      ->capture_default_str();
  cmd->add_option("--trigger-rate", o->trigger_rate, "Generated: trigger rate limit, Hz (0: none)")
      ->capture_default_str();
  cmd->add_option("--chunk-size", o->chunk_size,
                  "Generated: bytes per chunk of each RU's readout memory (0: default)")
      ->capture_default_str();
  cmd->add_option("--chunks", o->chunks, "Generated: chunks of readout memory (0: default)")
      ->capture_default_str();
  add_platform_options(cmd, *o);
  cmd->add_option("--duration", o->duration, "Simulated seconds between enable and halt")
      ->capture_default_str();
  add_cost_options(cmd, *o);
  cmd->add_option("--kill", o->kills, "Lose an application at a simulated time: APP@SECONDS");
  cmd->add_option("--cfg", o->simgrid_config,
                  "SimGrid configuration, as its --cfg= takes it (network/model:CM02, ...)");
  cmd->add_option("--summary", o->summary, "Also write the summary (JSON) to this file");
  cmd->footer(
      "Exit status: 0 when the simulated run ended ok, 1 when it failed, 2 when it "
      "could not start. docs/simulation.md explains the model and its limits.");
  cmd->callback([o] {
    const int rc = run_sim(*o);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

#else

void add_sim(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("sim", "Run a configuration on a simulated platform");
  cmd->allow_extras();
  cmd->callback([] {
    std::fprintf(stderr,
                 "daqflow sim: this daqflow was built without SimGrid (libsimgrid-dev; "
                 "scripts/bootstrap installs it)\n");
    throw CLI::RuntimeError(2);
  });
}

#endif

}  // namespace daqflow::cli
