// daqflow bench timeslice: time-slice building.

#include <memory>
#include <string>

#include "cli/bench_support.hpp"

namespace daqflow::cli {

void add_bench_timeslice(CLI::App& bench_cmd) {
  struct Args {
    Common common;
    std::string sizes = "1024,4096,16384,65536,262144";
    bench::TimesliceOptions options;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = bench_cmd.add_subcommand(
      "timeslice",
      "Time-slice building all to all: chaotic and scheduled against the raw N x N stream, per "
      "contribution size");
  // Every node runs an input and a builder (and the raw stream a source and a sink): twice as
  // many agents as cores here. The back-off leaves the CPU to those with work, by yielding
  // while they run rather than sleeping until woken (docs/benchmarks.md).
  add_common(cmd, a->common, "backoff");
  add_ranged(cmd, "--n", a->options.shape.n, "nodes: each an input and a builder", 2, 32);
  cmd->add_option("--sizes", a->sizes, "contribution sizes (bytes of content): list or range")
      ->capture_default_str();
  add_ranged(cmd, "--microslices", a->options.shape.microslices,
             "microslices of a contribution's core (the overlap is one more)", 1, 4096);
  cmd->add_option("--crc", a->options.shape.crc,
                  "inputs compute each microslice's CRC-32C and builders check it, and the "
                  "stream checks every byte (false: only the ends of its messages)")
      ->capture_default_str();
  add_ranged(
      cmd, "--slot-us", a->options.slot_us,
      "scheduled: fixed slots of this length on synchronised clocks; 0: in the builders' turns",
      0.0, 1e6);
  add_ranged(cmd, "--depth", a->options.cluster.pipeline_depth, "pipelining depth of every link", 1,
             4096);
  add_ranged(cmd, "--duration", a->options.duration_s, "seconds per run", 1.0, 3600.0);
  add_ranged(cmd, "--rounds", a->options.rounds, "rounds of the three runs per size, interleaved",
             1, 20);
  cmd->callback([a] {
    auto& o = a->options;
    const std::uint32_t depth = o.cluster.pipeline_depth;
    o.cluster = a->common.cluster;
    o.cluster.pipeline_depth = depth;
    o.cluster.cpus = parse_cpus(a->common.cpus);
    o.sizes = sweep(a->sizes, "--sizes", 64, 64u << 20);
    print_rows(run_and_write(o, a->common.out, bench::run_timeslice));
  });
}

}  // namespace daqflow::cli
