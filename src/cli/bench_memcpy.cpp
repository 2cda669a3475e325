// daqflow bench memcpy: memcpy, the copy every transport is measured against.

#include <memory>
#include <string>

#include "cli/bench_support.hpp"

namespace daqflow::cli {

void add_bench_memcpy(CLI::App& bench_cmd) {
  struct Args {
    std::string out = "bench-results";
    std::string sizes = "1024..4194304";
    bench::MemcpyOptions options;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = bench_cmd.add_subcommand("memcpy", "memcpy bandwidth per block size (reference)");
  cmd->add_option("--out", a->out, "folder of the result files")->capture_default_str();
  cmd->add_option("--sizes", a->sizes, "block sizes: list or doubling range")
      ->capture_default_str();
  add_ranged(cmd, "--duration", a->options.seconds, "seconds per size", 0.01, 600.0);
  cmd->callback([a] {
    a->options.sizes = sweep(a->sizes, "--sizes");
    print_rows(run_and_write(a->options, a->out, bench::run_memcpy));
  });
}

}  // namespace daqflow::cli
