#include "cli/bench_support.hpp"

#include <fmt/format.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <string>

#include "daqflow/bench/host.hpp"
#include "daqflow/bench/sweep.hpp"
#include "daqflow/control/process.hpp"

namespace daqflow::cli {

namespace {

std::atomic<int> g_bench_stops{0};
static_assert(std::atomic<int>::is_always_lock_free, "used from a signal handler");

extern "C" void on_bench_signal(int /*sig*/) {
  g_bench_stops.fetch_add(1, std::memory_order_relaxed);
}

void install_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_bench_signal;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

}  // namespace

bench::BenchEnv bench_env(const std::string& out, bench::Progress& progress) {
  auto self = control::self_executable();
  if (!self) fail("bench", self.error().message());
  install_handlers();
  bench::BenchEnv env;
  env.out_dir = out;
  env.self = *self;
  env.stop = &g_bench_stops;
  env.progress = &progress;
  return env;
}

bench::ResultSet write_result(Result<bench::BenchOutput> result, const std::string& out) {
  if (!result) fail("bench", result.error().message());
  auto written = bench::write_result_files(out, result->result, result->plot);
  if (!written) fail("bench", written.error().message());
  std::printf("%s\n", result->result.command.c_str());
  for (const auto& path : *written) std::printf("  wrote %s\n", path.c_str());
  return std::move(result->result);
}

// --cpus: "0,1" (a list), "none" or "" (not pinned), or "auto": the first two CPUs this process
// may use, when it may use two or more.
std::vector<int> parse_cpus(const std::string& text) {
  if (text.empty() || text == "none") return {};
  if (text == "auto") {
    auto cpus = bench::usable_cpus();
    if (cpus.size() < 2) return {};
    cpus.resize(2);
    return cpus;
  }
  std::vector<int> cpus;
  const auto usable = bench::usable_cpus();
  std::size_t start = 0;
  while (start <= text.size()) {
    auto comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = text.substr(start, comma - start);
    int cpu = -1;
    char extra = 0;
    if (std::sscanf(item.c_str(), "%d%c", &cpu, &extra) != 1 || cpu < 0) {
      fail("bench",
           "--cpus: '" + item + "' is not a CPU number (give a list such as 0,1, or none)");
    }
    if (std::find(usable.begin(), usable.end(), cpu) == usable.end()) {
      fail("bench", fmt::format("--cpus: this process may not run on CPU {} (usable: {})", cpu,
                                fmt::join(usable, ",")));
    }
    cpus.push_back(cpu);
    start = comma + 1;
  }
  return cpus;
}

bench::ClusterSettings Common::settings() const {
  bench::ClusterSettings c = cluster;
  c.cpus = parse_cpus(cpus);
  return c;
}

// Returns the --idle option, for subcommands whose default depends on other options.
CLI::Option* add_common(CLI::App* cmd, Common& c, const char* default_idle,
                        const char* default_cpus) {
  c.cluster.idle = default_idle;
  c.cpus = default_cpus;
  cmd->add_option("--cpus", c.cpus,
                  "pin the applications' agent threads to these CPUs, round robin in file order "
                  "(0,1: a 1-to-1 stream's source on 0, its sink on 1); none: the scheduler "
                  "places them")
      ->capture_default_str();
  cmd->add_option("--transport", c.cluster.transport, "the transport (daqflow transports)")
      ->capture_default_str();
  cmd->add_option("--out", c.out, "folder of the result files (and runs/: configs, logs)")
      ->capture_default_str();
  add_ranged(cmd, "--port-base", c.cluster.port_base,
             "first port of the generated configurations (3 per context)", 1024, 65000);
  auto* idle = cmd->add_option("--idle", c.cluster.idle, "idle strategy of the applications")
                   ->check(CLI::IsMember({"spin", "yield", "backoff", "block"}))
                   ->capture_default_str();
  cmd->add_option("--ucx-tls", c.cluster.ucx_tls, "ucx: UCX_TLS (transports.ucx_tls)");
  cmd->add_option("--ofi-provider", c.cluster.ofi_provider,
                  "ofi: libfabric provider (transports.ofi_provider)");
  return idle;
}

std::vector<std::uint64_t> sweep(const std::string& text, const char* option, std::uint64_t min,
                                 std::uint64_t max) {
  auto values = bench::parse_sweep(text, min, max);
  if (!values) fail("bench", std::string(option) + " " + values.error().message());
  return *values;
}

void print_rows(const bench::ResultSet& r) {
  std::string line;
  for (const auto& c : r.columns) line += fmt::format("{:>14} ", c.substr(0, 14));
  std::printf("%s\n", line.c_str());
  for (const auto& row : r.rows) {
    line.clear();
    for (const auto& v : row) {
      line += v.is_number_float()
                  ? fmt::format("{:>14.2f} ", v.get<double>())
                  : fmt::format("{:>14} ", v.is_string() ? v.get<std::string>() : v.dump());
    }
    std::printf("%s\n", line.c_str());
  }
}

}  // namespace daqflow::cli
