// daqflow bench farm: the filter farm.

#include <memory>
#include <string>

#include "cli/bench_support.hpp"

namespace daqflow::cli {

void add_bench_farm(CLI::App& bench_cmd) {
  struct Args {
    Common common;
    bench::FarmOptions options;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = bench_cmd.add_subcommand(
      "farm", "Filter farm: tokens and round_robin against a raw push, then one slow worker");
  // Twenty workers and their SFC share the machine's cores: agents that spin or yield while
  // idle take the CPU from those with work.
  add_common(cmd, a->common, "block");
  auto& s = a->options.shape;
  // Four tokens per worker: with two (the sfc's default) each worker's socket carries one or two
  // events per system call and the SFC's core, which pays for every loopback segment at both
  // ends, saturates first (docs/farm.md, "Benchmark and soak").
  s.window = 4;
  cmd->add_option("--workers", s.workers, "workers")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  cmd->add_option("--workers-per-process", s.workers_per_context, "workers sharing a process")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  cmd->add_option("--event-size", s.event_size, "bytes per event")
      ->check(CLI::Range(8, 16 << 20))
      ->capture_default_str();
  cmd->add_option("--window", s.window, "tokens per worker")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  cmd->add_option("--accept-fraction", s.accept_fraction, "events accepted (with output)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--output-bytes", s.output_bytes, "output of an accepted event, bytes")
      ->check(CLI::Range(0, 16 << 20))
      ->capture_default_str();
  cmd->add_option("--time-us", a->options.time_us,
                  "second part: every worker's processing time, microseconds")
      ->check(CLI::Range(1.0, 1e6))
      ->capture_default_str();
  cmd->add_option("--slow-factor", a->options.slow_factor, "second part: the slow worker's factor")
      ->check(CLI::Range(1.0, 1000.0))
      ->capture_default_str();
  cmd->add_option("--duration", a->options.duration_s, "seconds per run")
      ->check(CLI::Range(1.0, 3600.0))
      ->capture_default_str();
  cmd->add_option("--rounds", a->options.rounds, "rounds of all the runs, interleaved")
      ->check(CLI::Range(1, 20))
      ->capture_default_str();
  cmd->callback([a] {
    auto& o = a->options;
    o.cluster = a->common.cluster;
    o.cluster.cpus = parse_cpus(a->common.cpus);
    print_rows(run_and_write(o, a->common.out, bench::run_farm));
  });
}

}  // namespace daqflow::cli
