// daqflow bench roundtrip|stream|evb|farm|timeslice|compare|memcpy: benchmark figures against their
// references, written as JSON, CSV and SVG into an output folder (docs/benchmarks.md; runners in
// src/bench/).
#include <fmt/format.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.hpp"
#include "daqflow/bench/host.hpp"
#include "daqflow/bench/runners.hpp"
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

struct Common {
  bench::ClusterSettings cluster;
  std::string out = "bench-results";
  std::string cpus;  // --cpus as given: a list, "none", or "auto"
};

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

// Returns the --idle option, for subcommands whose default depends on other options.
CLI::Option* add_common(CLI::App* cmd, Common& c, const char* default_idle,
                        const char* default_cpus = "none") {
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
  cmd->add_option("--port-base", c.cluster.port_base,
                  "first port of the generated configurations (3 per context)")
      ->check(CLI::Range(1024, 65000))
      ->capture_default_str();
  auto* idle = cmd->add_option("--idle", c.cluster.idle, "idle strategy of the applications")
                   ->check(CLI::IsMember({"spin", "yield", "backoff", "block"}))
                   ->capture_default_str();
  cmd->add_option("--ucx-tls", c.cluster.ucx_tls, "ucx: UCX_TLS (transports.ucx_tls)");
  cmd->add_option("--ofi-provider", c.cluster.ofi_provider,
                  "ofi: libfabric provider (transports.ofi_provider)");
  return idle;
}

std::vector<std::uint64_t> sweep(const std::string& text, const char* option, std::uint64_t min = 1,
                                 std::uint64_t max = 1u << 30) {
  auto values = bench::parse_sweep(text, min, max);
  if (!values) fail("bench", std::string(option) + " " + values.error().message());
  return *values;
}

// Runs a bench and writes its files; returns the written set.
template <typename Options, typename Runner>
bench::ResultSet run_and_write(const Options& options, const std::string& out, Runner runner) {
  auto self = control::self_executable();
  if (!self) fail("bench", self.error().message());
  install_handlers();
  bench::Progress progress;
  bench::BenchEnv env;
  env.out_dir = out;
  env.self = *self;
  env.stop = &g_bench_stops;
  env.progress = &progress;
  auto result = runner(options, env);
  progress.finish();
  if (!result) fail("bench", result.error().message());
  auto written = bench::write_result_files(out, result->result, result->plot);
  if (!written) fail("bench", written.error().message());
  std::printf("%s\n", result->result.command.c_str());
  for (const auto& path : *written) std::printf("  wrote %s\n", path.c_str());
  return std::move(result->result);
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

void add_roundtrip(CLI::App& bench_cmd) {
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
  cmd->add_option("--iterations", a->options.shape.iterations, "timed round trips per size")
      ->check(CLI::Range(1, 10000000))
      ->capture_default_str();
  cmd->add_option("--warmup", a->options.shape.warmup, "untimed round trips per size")
      ->capture_default_str();
  cmd->add_option("--fit", a->fit, "the sizes the fit covers, MIN..MAX")->capture_default_str();
  cmd->add_option("--timeout", a->options.timeout_s, "seconds the sweep may take")
      ->capture_default_str();
  cmd->callback([a] {
    const auto sizes = sweep(a->sizes, "--sizes", 0, 1u << 30);
    const auto fit = sweep(a->fit, "--fit", 0, 1u << 30);
    auto& o = a->options;
    o.cluster = a->common.cluster;
    o.cluster.cpus = parse_cpus(a->common.cpus);
    o.shape.min_size = sizes.front();
    o.shape.max_size = sizes.back();
    o.shape.fit_min_size = fit.front();
    o.shape.fit_max_size = fit.back();
    const auto r = run_and_write(o, a->common.out, bench::run_roundtrip);
    print_rows(r);
    std::printf("fit: %s\n", r.summary.dump().c_str());
  });
}

void add_stream(CLI::App& bench_cmd) {
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
  cmd->add_option("--duration", a->options.duration_s, "seconds per point")
      ->check(CLI::Range(0.2, 3600.0))
      ->capture_default_str();
  cmd->add_option("--sample-ms", a->options.sample_interval_ms, "sink sampling interval")
      ->check(CLI::Range(10, 10000))
      ->capture_default_str();
  cmd->add_option("--verify", a->options.verify, "payload check: ends or full")
      ->check(CLI::IsMember({"ends", "full"}))
      ->capture_default_str();
  cmd->callback([a] {
    auto& o = a->options;
    o.cluster = a->common.cluster;
    o.cluster.cpus = parse_cpus(a->common.cpus);
    o.sizes = sweep(a->sizes, "--sizes");
    o.depths = sweep(a->depths, "--depths", 1, 4096);
    o.ns = sweep(a->ns, "--n", 1, 64);
    print_rows(run_and_write(o, a->common.out, bench::run_stream));
  });
}

void add_evb(CLI::App& bench_cmd) {
  struct Args {
    Common common;
    std::string topologies = "3x2";
    std::string rubu;
    std::string fragment_sizes = "2048";
    bench::EvbOptions options;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = bench_cmd.add_subcommand(
      "evb", "Event builder rate, throughput and cost per event over topologies and sizes");
  add_common(cmd, a->common, "backoff");
  cmd->add_option("--topologies", a->topologies,
                  "RUxBU list, RUs counting the EVM: 1x1,2x2,3x2 ('' for none)")
      ->capture_default_str();
  cmd->add_option("--rubu", a->rubu, "single-stage builders of N nodes: list, e.g. 2,3");
  cmd->add_option("--fragment-sizes", a->fragment_sizes, "mean FED fragment sizes, bytes")
      ->capture_default_str();
  cmd->add_option("--feds", a->options.feds_per_ru, "FEDs per RU")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  cmd->add_option("--events-per-request", a->options.events_per_request, "events per block")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  cmd->add_option("--duration", a->options.duration_s, "seconds per point")
      ->check(CLI::Range(0.5, 3600.0))
      ->capture_default_str();
  cmd->add_option("--dashboard-clients", a->options.dashboard_clients,
                  "the cost of monitoring: the first point, without and then with this many "
                  "dashboards open on the EVM's executive, --rounds times; medians compared")
      ->check(CLI::Range(0, 64))
      ->capture_default_str();
  cmd->add_option("--rounds", a->options.rounds, "with --dashboard-clients: rounds of the pair")
      ->check(CLI::Range(1, 20))
      ->capture_default_str();
  cmd->callback([a] {
    auto& o = a->options;
    o.cluster = a->common.cluster;
    o.cluster.cpus = parse_cpus(a->common.cpus);
    o.topologies.clear();
    std::size_t start = 0;
    while (start < a->topologies.size()) {
      auto comma = a->topologies.find(',', start);
      if (comma == std::string::npos) comma = a->topologies.size();
      const std::string t = a->topologies.substr(start, comma - start);
      int rus = 0;
      int bus = 0;
      char x = 0;
      char extra = 0;
      if (std::sscanf(t.c_str(), "%d%c%d%c", &rus, &x, &bus, &extra) != 3 || x != 'x' || rus < 1 ||
          bus < 1 || rus > 32 || bus > 32) {
        fail("bench", "--topologies: '" + t + "' is not RUSxBUS (e.g. 3x2, at most 32x32)");
      }
      o.topologies.emplace_back(rus, bus);
      start = comma + 1;
    }
    o.rubu.clear();
    if (!a->rubu.empty()) {
      for (auto n : sweep(a->rubu, "--rubu", 1, 32)) o.rubu.push_back(static_cast<int>(n));
    }
    o.fragment_sizes = sweep(a->fragment_sizes, "--fragment-sizes", 64, 1u << 20);
    print_rows(run_and_write(o, a->common.out, bench::run_evb));
  });
}

void add_farm(CLI::App& bench_cmd) {
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

void add_timeslice(CLI::App& bench_cmd) {
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
  // many agents as cores here, which must sleep when idle to leave the CPU to those with work.
  add_common(cmd, a->common, "block");
  cmd->add_option("--n", a->options.shape.n, "nodes: each an input and a builder")
      ->check(CLI::Range(2, 32))
      ->capture_default_str();
  cmd->add_option("--sizes", a->sizes, "contribution sizes (bytes of content): list or range")
      ->capture_default_str();
  cmd->add_option("--microslices", a->options.shape.microslices,
                  "microslices of a contribution's core (the overlap is one more)")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  cmd->add_option("--crc", a->options.shape.crc,
                  "inputs compute each microslice's CRC-32C and builders check it, and the "
                  "stream checks every byte (false: only the ends of its messages)")
      ->capture_default_str();
  cmd->add_option("--slot-us", a->options.slot_us,
                  "scheduled: slot length; 0: the stream's time per message and sender in the "
                  "same round")
      ->check(CLI::Range(0.0, 1e6))
      ->capture_default_str();
  cmd->add_option("--depth", a->options.cluster.pipeline_depth, "pipelining depth of every link")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  cmd->add_option("--duration", a->options.duration_s, "seconds per run")
      ->check(CLI::Range(1.0, 3600.0))
      ->capture_default_str();
  cmd->add_option("--rounds", a->options.rounds, "rounds of the three runs per size, interleaved")
      ->check(CLI::Range(1, 20))
      ->capture_default_str();
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

void add_compare(CLI::App& bench_cmd) {
  struct Args {
    Common common;
    bench::CompareOptions options;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = bench_cmd.add_subcommand(
      "compare", "A daqflow figure between two runs of its reference tool, as a ratio");
  CLI::Option* idle = add_common(cmd, a->common, "backoff (latency: spin)", "auto");
  cmd->add_option("--kind", a->options.kind, "stream, latency or memcpy")
      ->check(CLI::IsMember({"stream", "latency", "memcpy"}))
      ->capture_default_str();
  cmd->add_option("--size", a->options.size, "message size (default 1 MiB; latency 64 B)");
  cmd->add_option("--duration", a->options.duration_s, "seconds per measurement")
      ->check(CLI::Range(0.5, 3600.0))
      ->capture_default_str();
  cmd->add_option("--depth", a->common.cluster.pipeline_depth, "stream: pipelining depth")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  cmd->add_option("--iterations", a->options.iterations, "latency: timed round trips")
      ->check(CLI::Range(1, 10000000))
      ->capture_default_str();
  cmd->add_option(
         "--reference", a->options.reference,
         "the reference tool instead of the transport's usual one (iperf3, sockperf, "
         "memcpy, ucx_perftest, fabtests, mpi_bw, zeromq: PUSH/PULL over tcp, or ipc for shm; "
         "ucp_am_bw: UCX active messages moving written data as the ucx transport does)")
      ->check(CLI::IsMember({"iperf3", "sockperf", "memcpy", "ucx_perftest", "fabtests", "mpi_bw",
                             "zeromq", "ucp_am_bw"}));
  cmd->add_option("--verify", a->options.verify,
                  "stream: payload check of source and sink (ends, or full: every byte written "
                  "and read)")
      ->check(CLI::IsMember({"ends", "full"}))
      ->capture_default_str();
  cmd->get_option("--cpus")->description(
      "pin the sender and the receiver, daqflow's agents and the reference tool's processes "
      "alike, to these two CPUs; auto: the first two this process may use (none for mpi, "
      "whose ranks mpirun places); none: the scheduler places them");
  cmd->add_option("--rounds", a->options.rounds,
                  "daqflow figures, each followed by another reference run; medians compared")
      ->check(CLI::Range(1, 20))
      ->capture_default_str();
  cmd->add_option("--reference-buffers", a->options.reference_buffers,
                  "mpi_bw, ucp_am_bw: distinct buffers per side (1 as osu_bw and ucx_perftest, "
                  "which keeps them in cache)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  cmd->add_flag("--reference-err-handling", a->options.reference_err_handling,
                "ucx_perftest (-e), ucp_am_bw (--peer): endpoints with error handling, as "
                "daqflow's ucx endpoints have where the peer is not reached through shared "
                "memory");
  cmd->add_option("--reference-port", a->options.reference_port,
                  "first port of the reference tools (iperf3; sockperf +1, ucx_perftest +2, "
                  "fi_pingpong +3, zeromq +4, ucp_am_bw +5)")
      ->capture_default_str();
  cmd->callback([a, idle] {
    auto& o = a->options;
    o.cluster = a->common.cluster;
    // auto: the sender and the receiver each on a CPU of their own, daqflow's and the
    // reference's alike; not for mpi, whose engine threads mpirun places.
    const bool mpi = o.cluster.transport == "mpi" || o.reference == "mpi_bw";
    if (!(a->common.cpus == "auto" && mpi)) o.cluster.cpus = parse_cpus(a->common.cpus);
    // The minimum round trip is the latency figure compared; agents that spin show it, agents
    // that back off add their wake-up time (which grows with the machine's load).
    if (idle->count() == 0) o.cluster.idle = o.kind == "latency" ? "spin" : "backoff";
    const auto r = run_and_write(o, a->common.out, bench::run_compare);
    const auto& s = r.summary;
    const auto& ref = s["reference"];
    std::printf(
        "compare %s over %s, %s B: daqflow %.2f %s, %s %.2f %s (first %.2f, last %.2f): "
        "ratio %.3f (rounds against the reference runs around them: median %.3f)%s\n",
        o.kind.c_str(), r.transport.c_str(), s["size"].dump().c_str(),
        s["daqflow"]["value"].get<double>(), s["unit"].get<std::string>().c_str(),
        ref["tool"].get<std::string>().c_str(), ref["value"].get<double>(),
        s["unit"].get<std::string>().c_str(), ref["before"].get<double>(),
        ref["after"].get<double>(), s["ratio"].get<double>(), s["paired_ratio"].get<double>(),
        o.kind == "latency" ? fmt::format(" ({} RTT: daqflow is {:.2f}x the reference latency)",
                                          s["statistic"].get<std::string>(),
                                          s["daqflow_over_reference"].get<double>())
                                  .c_str()
                            : "");
  });
}

void add_memcpy(CLI::App& bench_cmd) {
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
  cmd->add_option("--duration", a->options.seconds, "seconds per size")
      ->check(CLI::Range(0.01, 600.0))
      ->capture_default_str();
  cmd->callback([a] {
    a->options.sizes = sweep(a->sizes, "--sizes");
    print_rows(run_and_write(a->options, a->out, bench::run_memcpy));
  });
}

void add_sim_bench(CLI::App& bench_cmd) {
  struct Args {
    std::string out = "bench-results";
    std::string nodes = "16,32,64";
    std::string epr = "32";
    std::string bif = "4";
    bench::SimBenchOptions options;
  };
  auto a = std::make_shared<Args>();
  auto& o = a->options;
  auto* cmd = bench_cmd.add_subcommand(
      "sim", "The event builders at scale, simulated (daqflow sim): a sweep over node counts");
  cmd->add_option("--out", a->out, "folder of the result files")->capture_default_str();
  cmd->add_option("--kind", o.kinds,
                  "evb (two-stage: N/2 RUs, N/2 BUs), rubu, ts-chaotic, ts-scheduled (time-slice "
                  "building of N nodes): a list")
      ->delimiter(',')
      ->check(CLI::IsMember({"evb", "rubu", "ts-chaotic", "ts-scheduled"}))
      ->capture_default_str();
  cmd->add_option("--nodes", a->nodes, "node counts: list or doubling range")
      ->capture_default_str();
  cmd->add_option("--events-per-request", a->epr, "events per block: list or doubling range")
      ->capture_default_str();
  cmd->add_option("--blocks-in-flight", a->bif, "blocks per BU at once: list or doubling range")
      ->capture_default_str();
  cmd->add_option("--feds", o.feds_per_ru, "FEDs per RU")->capture_default_str();
  cmd->add_option("--fragment", o.fragment, "mean FED fragment, bytes")->capture_default_str();
  cmd->add_option("--event-size", o.event_size,
                  "event size, bytes, whatever the node count (the FEDs' fragments shrink as "
                  "RUs are added); 0: --fragment per FED")
      ->capture_default_str();
  cmd->add_option("--trigger-rate", o.trigger_rate_hz, "trigger rate limit, Hz (0: none)")
      ->capture_default_str();
  cmd->add_option("--contribution", o.contribution, "ts kinds: bytes of a contribution")
      ->capture_default_str();
  cmd->add_flag("--manager", o.ts_manager, "ts kinds: a ts_manager assigns the timeslices");
  cmd->add_option("--platform", o.platform, "star or fat-tree")
      ->check(CLI::IsMember({"star", "fat-tree"}))
      ->capture_default_str();
  cmd->add_option("--link-gbps", o.link_gbps, "link bandwidth, Gb/s")->capture_default_str();
  cmd->add_option("--latency-us", o.latency_us, "link latency, us")->capture_default_str();
  cmd->add_option("--cores", o.cores, "cores per host")->capture_default_str();
  cmd->add_option("--leaf-hosts", o.leaf_hosts, "fat-tree: hosts per leaf")->capture_default_str();
  cmd->add_option("--spines", o.spines, "fat-tree: spine switches")->capture_default_str();
  cmd->add_option("--oversubscription", o.oversubscription, "fat-tree: leaf oversubscription")
      ->capture_default_str();
  cmd->add_option("--duration", o.duration_s, "simulated seconds per point")->capture_default_str();
  cmd->add_option("--cpu", o.cpu, "fixed (reproducible) or measured")
      ->check(CLI::IsMember({"fixed", "measured"}))
      ->capture_default_str();
  cmd->add_option("--round-ns", o.round_ns, "fixed: CPU of a round of work")->capture_default_str();
  cmd->add_option("--send-message-ns", o.send_message_ns, "transport CPU per message sent")
      ->capture_default_str();
  cmd->add_option("--send-byte-ns", o.send_byte_ns, "... per byte sent")->capture_default_str();
  cmd->add_option("--recv-message-ns", o.recv_message_ns, "... per message received")
      ->capture_default_str();
  cmd->add_option("--recv-byte-ns", o.recv_byte_ns, "... per byte received")->capture_default_str();
  cmd->add_option("--payload-scale", o.payload_scale,
                  "phantom payloads: fragments carried at 1/K of their size, the network and the "
                  "byte costs charged K times (daqflow sim --payload-scale)")
      ->capture_default_str();
  cmd->add_option("--control-scale", o.control_scale,
                  "control messages take K times their bytes on the wire (daqflow sim "
                  "--control-scale): data mixed with a chosen share of control traffic")
      ->capture_default_str();
  cmd->add_option("--network", o.network,
                  "flow (SimGrid's model) or fifo (links as queues, a timer per message)")
      ->check(CLI::IsMember({"flow", "fifo"}))
      ->capture_default_str();
  cmd->add_option("--cfg", o.simgrid_config,
                  "SimGrid settings for every point (daqflow sim --cfg); replaces the default")
      ->capture_default_str();
  cmd->add_option("--point-timeout", o.point_timeout_s, "wall-clock seconds per point at most")
      ->capture_default_str();
  cmd->callback([a] {
    auto& opt = a->options;
    opt.nodes = sweep(a->nodes, "--nodes", 4, 100000);
    opt.events_per_request = sweep(a->epr, "--events-per-request", 1, 1024);
    opt.blocks_in_flight = sweep(a->bif, "--blocks-in-flight", 1, 256);
    print_rows(run_and_write(opt, a->out, bench::run_sim_bench));
  });
}

}  // namespace

void add_bench(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "bench", "Benchmarks against their reference tools: JSON, CSV and SVG per figure set");
  cmd->require_subcommand(1);
  add_roundtrip(*cmd);
  add_stream(*cmd);
  add_evb(*cmd);
  add_farm(*cmd);
  add_timeslice(*cmd);
  add_compare(*cmd);
  add_memcpy(*cmd);
  add_sim_bench(*cmd);
}

}  // namespace daqflow::cli
