// daqflow bench stream: streams between sources and sinks.

#include <memory>
#include <string>

#include "cli/bench_support.hpp"

namespace daqflow::cli {

void add_bench_stream(CLI::App& bench_cmd) {
  struct Args {
    Common common;
    std::string sizes = "1024..4194304";
    std::string depths = "8";
    std::string ns = "2";
    bench::StreamOptions options;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = bench_cmd.add_subcommand(
      "stream", "Stream bandwidth per receiver and in total over size, depth and N sweeps");
  add_common(cmd, a->common, "backoff");
  cmd->add_option("--pattern", a->options.pattern, "1to1, 1toN, Nto1, nton (two-stage), nxn")
      ->check(CLI::IsMember({"1to1", "1toN", "Nto1", "nton", "nxn"}))
      ->capture_default_str();
  cmd->add_option("--sizes", a->sizes, "message sizes: list or doubling range")
      ->capture_default_str();
  cmd->add_option("--depths", a->depths, "pipelining depths: list or doubling range")
      ->capture_default_str();
  cmd->add_option("--n", a->ns, "N of 1toN, Nto1, nton, nxn: list or range")->capture_default_str();
  add_ranged(cmd, "--duration", a->options.duration_s, "seconds per point", 0.2, 3600.0);
  add_ranged(cmd, "--sample-ms", a->options.sample_interval_ms, "sink sampling interval", 10,
             10000);
  cmd->add_option("--verify", a->options.verify, "payload check: ends or full")
      ->check(CLI::IsMember({"ends", "full"}))
      ->capture_default_str();
  cmd->callback([a] {
    auto& o = a->options;
    o.cluster = a->common.settings();
    o.sizes = sweep(a->sizes, "--sizes");
    o.depths = sweep(a->depths, "--depths", 1, 4096);
    o.ns = sweep(a->ns, "--n", 1, 64);
    print_rows(run_and_write(o, a->common.out, bench::run_stream));
  });
}

}  // namespace daqflow::cli
