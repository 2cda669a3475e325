// daqflow bench roundtrip: the round-trip sweep.

#include <cstdio>
#include <memory>
#include <string>

#include "cli/bench_support.hpp"

namespace daqflow::cli {

void add_bench_roundtrip(CLI::App& bench_cmd) {
  struct Args {
    Common common;
    std::string sizes = "64..4194304";
    std::string fit = "8192..524288";
    bench::RoundtripOptions options;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = bench_cmd.add_subcommand(
      "roundtrip", "Round-trip time over a size sweep and the fit tau(P) = c*P + tau0");
  add_common(cmd, a->common, "backoff");
  cmd->add_option("--sizes", a->sizes, "sizes: doubling from the first to the last")
      ->capture_default_str();
  add_ranged(cmd, "--iterations", a->options.shape.iterations, "timed round trips per size", 1,
             10000000);
  cmd->add_option("--warmup", a->options.shape.warmup, "untimed round trips per size")
      ->capture_default_str();
  cmd->add_option("--fit", a->fit, "the sizes the fit covers, MIN..MAX")->capture_default_str();
  cmd->add_option("--timeout", a->options.timeout_s, "seconds the sweep may take")
      ->capture_default_str();
  cmd->callback([a] {
    const auto sizes = sweep(a->sizes, "--sizes", 0, 1u << 30);
    const auto fit = sweep(a->fit, "--fit", 0, 1u << 30);
    auto& o = a->options;
    o.cluster = a->common.settings();
    o.shape.min_size = sizes.front();
    o.shape.max_size = sizes.back();
    o.shape.fit_min_size = fit.front();
    o.shape.fit_max_size = fit.back();
    const auto r = run_and_write(o, a->common.out, bench::run_roundtrip);
    print_rows(r);
    std::printf("fit: %s\n", r.summary.dump().c_str());
  });
}

}  // namespace daqflow::cli
