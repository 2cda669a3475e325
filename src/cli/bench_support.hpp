#pragma once
// What the `daqflow bench` subcommands share (one file each, bench_*.cpp): the options every
// subcommand has, sweeps, CPU lists, running a bench with its stop signals and progress, and
// writing and printing its results.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "cli/commands.hpp"
#include "daqflow/bench/progress.hpp"
#include "daqflow/bench/runners.hpp"

namespace daqflow::cli {

struct Common {
  bench::ClusterSettings cluster;
  std::string out = "bench-results";
  std::string cpus;  // --cpus as given: a list, "none", or "auto"

  // The cluster settings with --cpus resolved (parse_cpus).
  [[nodiscard]] bench::ClusterSettings settings() const;
};

// --cpus: "0,1" (a list), "none" or "" (not pinned), or "auto": the first two CPUs this process
// may use, when it may use two or more.
[[nodiscard]] std::vector<int> parse_cpus(const std::string& text);

// The options every subcommand has; returns the --idle option, for subcommands whose default
// depends on other options.
CLI::Option* add_common(CLI::App* cmd, Common& c, const char* default_idle,
                        const char* default_cpus = "none");

// An option bounded to [lo, hi], its default shown in --help.
template <typename T, typename Bound>
CLI::Option* add_ranged(CLI::App* cmd, const std::string& name, T& value, const std::string& help,
                        Bound lo, Bound hi) {
  return cmd->add_option(name, value, help)->check(CLI::Range(lo, hi))->capture_default_str();
}

// A sweep option's values ("64,4096" or "64..1M"); a bad one ends the command naming option.
[[nodiscard]] std::vector<std::uint64_t> sweep(const std::string& text, const char* option,
                                               std::uint64_t min = 1, std::uint64_t max = 1u << 30);

// The environment of a bench run: this executable, the stop counter SIGINT and SIGTERM raise
// (handlers installed), progress on the terminal.
[[nodiscard]] bench::BenchEnv bench_env(const std::string& out, bench::Progress& progress);

// Writes a run's result files into out and names them; a failed run ends the command.
bench::ResultSet write_result(Result<bench::BenchOutput> result, const std::string& out);

// Runs a bench and writes its files; returns the written set.
template <typename Options, typename Runner>
bench::ResultSet run_and_write(const Options& options, const std::string& out, Runner runner) {
  bench::Progress progress;
  bench::BenchEnv env = bench_env(out, progress);
  auto result = runner(options, env);
  progress.finish();
  return write_result(std::move(result), out);
}

void print_rows(const bench::ResultSet& r);

// The subcommands.
void add_bench_roundtrip(CLI::App& bench_cmd);
void add_bench_stream(CLI::App& bench_cmd);
void add_bench_evb(CLI::App& bench_cmd);
void add_bench_farm(CLI::App& bench_cmd);
void add_bench_timeslice(CLI::App& bench_cmd);
void add_bench_compare(CLI::App& bench_cmd);
void add_bench_memcpy(CLI::App& bench_cmd);
void add_bench_sim(CLI::App& bench_cmd);

}  // namespace daqflow::cli
