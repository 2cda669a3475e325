#pragma once
// The runners behind `daqflow bench roundtrip|stream|evb|farm|timeslice|compare|memcpy`
// (docs/benchmarks.md). Each generates the cluster configurations of its points, runs them one
// after the other with control::run_cluster (as `daqflow run` does: real executives, real
// transports), reads the summaries and returns the figure set and its plot. A point that fails ends
// the bench with an error naming the point and where its logs are.

#include <atomic>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "daqflow/bench/configs.hpp"
#include "daqflow/bench/plot.hpp"
#include "daqflow/bench/progress.hpp"
#include "daqflow/bench/result_set.hpp"
#include "daqflow/core/result.hpp"

namespace daqflow::bench {

// Where a bench runs and reports.
struct BenchEnv {
  std::string out_dir = "bench-results";   // result files; generated configs and logs in runs/
  std::string self;                        // the daqflow executable the contexts run
  const std::atomic<int>* stop = nullptr;  // counted stop requests (signals); may be null
  Progress* progress = nullptr;            // may be null: nothing shown
};

struct BenchOutput {
  ResultSet result;
  Plot plot;
};

// Checks that the transport is built into this binary; the error lists the built ones.
[[nodiscard]] Result<void> check_transport(const std::string& name);

struct RoundtripOptions {
  ClusterSettings cluster;  // idle "spin" by default for the round trip (set by the CLI)
  RoundtripShape shape;
  double timeout_s = 600;  // the sweep must finish within this
};
[[nodiscard]] std::string command_line(const RoundtripOptions& options);
[[nodiscard]] Result<BenchOutput> run_roundtrip(const RoundtripOptions& options, BenchEnv& env);

struct StreamOptions {
  ClusterSettings cluster;
  std::string pattern = "1to1";
  std::vector<std::uint64_t> sizes{1u << 20};
  std::vector<std::uint64_t> depths{8};
  std::vector<std::uint64_t> ns{2};  // ignored by 1to1
  double duration_s = 5;
  int sample_interval_ms = 200;
  std::string verify = "ends";
};
[[nodiscard]] std::string command_line(const StreamOptions& options);
// "stream-<pattern>-<transport>-<swept>": the swept dimensions (size, depth, n) joined by '-',
// or the message size when nothing is swept.
[[nodiscard]] std::string stream_stem(const StreamOptions& options);
[[nodiscard]] Result<BenchOutput> run_stream(const StreamOptions& options, BenchEnv& env);

struct EvbOptions {
  ClusterSettings cluster;
  std::vector<std::pair<int, int>> topologies{{3, 2}};  // (RUs incl. the EVM, BUs)
  std::vector<int> rubu;                                // nodes of single-stage builders
  std::vector<std::uint64_t> fragment_sizes{2048};
  int feds_per_ru = 8;
  std::uint32_t events_per_request = 32;
  double duration_s = 5;
  // > 0: the cost of monitoring instead: the first topology and size, `rounds` times without
  // and then with this many dashboards open on the EVM's executive (each asking for every
  // context's snapshot once a second, as web/dashboard.js does); medians compared.
  int dashboard_clients = 0;
  int rounds = 3;
  // Where fragments come from: emulator (built in), plugin (the emulator's fragments through the
  // readout plugin ABI), or both: the first topology and size, `rounds` times each, medians
  // compared.
  std::string readout = "emulator";
};
[[nodiscard]] std::string command_line(const EvbOptions& options);
[[nodiscard]] std::string evb_stem(const EvbOptions& options);
[[nodiscard]] Result<BenchOutput> run_evb(const EvbOptions& options, BenchEnv& env);

// The filter farm: the policies side by side (tokens and round_robin against the raw push), then
// with a processing time and one worker slow_factor times slower, where tokens must keep its
// rate and round_robin loses it. Rounds interleave the policies; medians are compared.
struct FarmOptions {
  ClusterSettings cluster;
  FarmShape shape;        // policy and times are set per run
  double duration_s = 5;  // per run
  int rounds = 3;
  double time_us = 2000;    // the heterogeneous part: every worker's processing time
  double slow_factor = 10;  // ... and the slow worker's factor
};
[[nodiscard]] std::string command_line(const FarmOptions& options);
[[nodiscard]] Result<BenchOutput> run_farm(const FarmOptions& options, BenchEnv& env);

// Time-slice building all to all: for each contribution size, in rounds, the raw N x N stream of
// the transport (bench stream --pattern nxn, messages of the contribution's size on the wire), then
// the time-slice builder in chaotic and in scheduled order; the receive rate per builder against
// the stream's per receiver, by medians. Scheduled runs go in the builders' turns and report a
// builder's mean turn; slot_us > 0 runs them in fixed slots on synchronised clocks instead, and
// reports the clocks' precision.
struct TimesliceOptions {
  ClusterSettings cluster;
  TimesliceShape shape;  // contribution size and order are set per run
  std::vector<std::uint64_t> sizes{1024, 4096, 16384, 65536, 262144};
  double duration_s = 3;  // per run
  int rounds = 3;
  double slot_us = 0;  // 0: in turns
};
[[nodiscard]] std::string command_line(const TimesliceOptions& options);
[[nodiscard]] Result<BenchOutput> run_timeslice(const TimesliceOptions& options, BenchEnv& env);

struct MemcpyOptions {
  std::vector<std::uint64_t> sizes{1u << 20};
  double seconds = 1;
};
[[nodiscard]] std::string command_line(const MemcpyOptions& options);
[[nodiscard]] Result<BenchOutput> run_memcpy(const MemcpyOptions& options, BenchEnv& env);

// The builders at scale, simulated (`daqflow sim`, docs/simulation.md): for every kind (evb: a
// two-stage builder of N/2 RUs, the EVM one of them, and N/2 BUs; rubu: N nodes each a RU and a
// BU), node count, events per request and blocks in flight, one simulation in a child process
// (one simulation per process). The figures are the simulation's: event rate, throughput per
// builder node and its share of the link, the EVM's CPU load, block assembly time percentiles,
// and the simulator's own cost (wall-clock time, events per wall-clock second, memory per host).
// Kinds ts-chaotic and ts-scheduled: time-slice building of N nodes (an input and a builder
// each), contributions of `contribution` bytes sent as they come or in the slots of the
// simulation's clock; their events are timeslices.
struct SimBenchOptions {
  std::vector<std::string> kinds{"evb", "rubu"};
  std::vector<std::uint64_t> nodes{16, 32, 64};
  std::vector<std::uint64_t> events_per_request{32};
  std::vector<std::uint64_t> blocks_in_flight{4};
  int feds_per_ru = 2;
  std::uint64_t fragment = 8192;  // mean FED fragment, bytes
  // > 0: the event size instead, whatever the node count (each FED's fragment the event over
  // the FEDs of all RUs), as an experiment's detector fixes it.
  std::uint64_t event_size = 0;
  double trigger_rate_hz = 0;
  std::uint64_t contribution = 65536;  // ts kinds: an input's contribution to a timeslice, bytes
  bool ts_manager = false;             // ts kinds: with a ts_manager (daqflow sim --manager)
  std::string platform = "star";       // star | fat-tree
  double link_gbps = 100;
  double latency_us = 1;
  int cores = 16;
  std::size_t leaf_hosts = 16;
  std::size_t spines = 4;
  double oversubscription = 1;
  double duration_s = 0.02;  // simulated, per point
  std::string cpu = "fixed";
  double round_ns = 1000;
  // The transport's CPU per message and byte: an RDMA transport's by default (a microsecond per
  // message each side, no copy), as 100 Gb/s builders use; docs/simulation.md has this
  // machine's tcp figures.
  double send_message_ns = 1000;
  double send_byte_ns = 0;
  double recv_message_ns = 1000;
  double recv_byte_ns = 0;
  double payload_scale = 1;      // phantom payloads (daqflow sim --payload-scale)
  double control_scale = 1;      // control traffic's volume (daqflow sim --control-scale)
  std::string network = "flow";  // daqflow sim --network: flow or fifo
  // SimGrid settings (daqflow sim --cfg): by default without the LV08 model's reverse flows for
  // TCP's acknowledgements (an RDMA network has none to speak of), which double the network
  // solver's work.
  std::vector<std::string> simgrid_config{"network/crosstraffic:0"};
  double point_timeout_s = 7200;  // wall-clock, per point
};
[[nodiscard]] std::string command_line(const SimBenchOptions& options);
[[nodiscard]] Result<BenchOutput> run_sim_bench(const SimBenchOptions& options, BenchEnv& env);

struct CompareOptions {
  ClusterSettings cluster;
  std::string kind = "stream";       // stream | latency | memcpy
  std::uint64_t size = 0;            // 0: 1 MiB for stream and memcpy, 64 B for latency
  double duration_s = 5;             // per measurement (stream, memcpy, the reference tools)
  std::uint64_t iterations = 20000;  // latency: timed round trips
  int reference_port = 11900;        // reference tools listen here
  // The reference tool when not the usual one for the transport (e.g. ucx_perftest for shm:
  // UCX's shared-memory bandwidth with --ucx-tls posix,cma,self).
  std::string reference;
  std::string verify = "ends";  // stream: the payload check of source and sink (ends | full)
  // daqflow figures, each followed by a reference run: reference, daqflow, reference, ... The
  // ratio is between the medians, which a noisy machine moves less than single runs.
  int rounds = 3;
  // mpi_bw: distinct buffers per side (1, osu_bw's way, keeps them in cache; the pipeline depth
  // gives the reference as many different messages in flight as daqflow has).
  int reference_buffers = 1;
  // ucx_perftest: endpoints with error handling (its -e), as daqflow's ucx endpoints have where
  // the peer is not reached through shared memory (a dead peer must be reported, not fatal).
  bool reference_err_handling = false;
};
[[nodiscard]] std::string command_line(const CompareOptions& options);
[[nodiscard]] std::string compare_stem(const CompareOptions& options);
// Runs the reference, then rounds times the daqflow figure (whose own result files are written
// into the out folder too, one stem per round when there are several) and the reference again.
[[nodiscard]] Result<BenchOutput> run_compare(const CompareOptions& options, BenchEnv& env);

}  // namespace daqflow::bench
