#pragma once
// The simulator: a cluster configuration run in one process on a simulated platform (SimGrid),
// with the applications themselves, unchanged, on the sim transport (docs/simulation.md).
//
// Every context of the configuration becomes a simulated host; every application an actor on its
// context's host that configures it, runs its agent loop (do_work(), and wait_for_work() when
// idle) and releases it. A control actor enables the applications in rank order, lets the run
// go for the simulated duration, halts them (highest rank first, each drained) and folds their
// results as `daqflow run` does. Time is the simulation's: the applications' clock is
// core::Clock over it. CPU time: what each round of do_work() took on this machine is measured
// and executed on the application's simulated host (cores shared by its actors), with what the
// transport would cost on top (transport::SimOptions); or, for runs that must reproduce exactly,
// only a fixed cost per round.
//
// SimGrid allows one simulation per process: simulate() may be called once.

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "daqflow/core/result.hpp"
#include "daqflow/runtime/application.hpp"
#include "daqflow/runtime/config.hpp"
#include "daqflow/transport/options.hpp"

namespace daqflow::sim {

// The simulated machines and network.
struct PlatformSpec {
  enum class Kind : std::uint8_t {
    star,      // every host on its own link (up and down) to one non-blocking switch
    fat_tree,  // two levels (leaf and spine switches), links all alike, routes static
    file,      // a SimGrid platform file: contexts run on the hosts named like their `host`
  };
  Kind kind = Kind::star;
  std::string file;
  std::size_t hosts = 0;           // generated platforms; 0: one per context
  double link_bytes_s = 12.5e9;    // each host's link (100 Gb/s)
  double link_latency_s = 1e-6;    // one way, per link
  int cores = 16;                  // per host
  double core_flops = 1e9;         // per core; the simulator's unit: 1 flop = 1 ns of CPU
  double loopback_bytes_s = 20e9;  // between applications of one host
  double loopback_latency_s = 1e-7;
  // fat_tree: hosts per leaf switch, spine switches, and the leaves' oversubscription (host
  // links over uplinks, at least 1: uplinks are links like the hosts', so a leaf has
  // leaf_hosts / oversubscription of them, spread over the spines, rounded up).
  std::size_t leaf_hosts = 16;
  std::size_t spines = 4;
  double oversubscription = 1;
};

// How the CPU time of the applications is charged.
enum class CpuModel : std::uint8_t {
  measured,  // each do_work() round's CPU time on this machine, times cpu_scale
  fixed,     // round_ns per round that did work (reproducible; with the transport's costs)
};

// One application lost at a simulated time, as a crash would (its agent stops, its endpoint
// aborts).
struct Kill {
  std::string app;
  double at_s = 0;
};

struct SimSettings {
  PlatformSpec platform;
  double duration_s = 1.0;  // simulated time enabled
  CpuModel cpu = CpuModel::measured;
  double cpu_scale = 1.0;       // measured: this machine's CPU time -> the simulated host's
  double round_ns = 1000;       // fixed
  transport::SimOptions costs;  // the transport's CPU per message and byte
  std::vector<Kill> kills;
  double halt_timeout_s = 10;  // simulated: an application that does not drain fails the halt
  // Extra SimGrid configuration ("network/model:CM02", ...), as --cfg= would give it.
  std::vector<std::string> simgrid_config;
};

// Runs the configuration. The summary is `daqflow run`'s (control::RunSummary: status, duration,
// applications with their state, metrics and results, the folded results) with "simulation":
// {"simulated_s", "wall_s", "hosts", "actors", "cpu_charged_s", "cpu_s" (simulated CPU seconds
// by application), "max_rss_kb", "rss_per_host_kb", "events_per_wall_s" (events built per second
// of the simulator's own time), "wall_setup_s", "wall_run_s", "wall_halt_s", "payload_scale",
// "network" (flow or fifo), "window" (what the builder units built in the run's last 80%: events,
// bytes, rate and throughput, the steady figures of a short run; the bytes every application put on
// the wire and the share of them that is data), "platform", "cpu"}. An error is what keeps the
// simulation from starting (a platform file that does not load, a context on no host); an
// application that fails is a failure in the summary, as in a real run.
[[nodiscard]] Result<nlohmann::json> simulate(const runtime::ClusterConfig& cluster,
                                              const runtime::AppRegistry& registry,
                                              const SimSettings& settings);

}  // namespace daqflow::sim
