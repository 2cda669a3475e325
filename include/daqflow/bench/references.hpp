#pragma once
// The reference tools `daqflow bench compare` sets daqflow's figures beside (docs/benchmarks.md),
// and the parsers of their output. The tools run as child processes on 127.0.0.1; a tool that is
// not installed is an error naming its Debian package.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "daqflow/core/result.hpp"

namespace daqflow::bench {

struct ReferenceSpec {
  std::string transport;
  std::string kind;  // stream | latency | memcpy
  std::uint64_t size = 0;
  double duration_s = 5;
  int port = 11900;
  std::string ucx_tls;       // ucx: UCX_TLS for both sides ("" = UCX's choice)
  std::string ofi_provider;  // ofi: the provider
  std::string bin_dir;       // where daqflow's own reference programs are (mpi_bw, fi_bw)
  std::string log_dir;       // the tools' output
  std::string tool;          // the reference tool; "" = the usual one for transport and kind
  int buffers = 1;           // mpi_bw, ucp_am_bw: distinct buffers per side
  // ucx_perftest (-e), ucp_am_bw (--peer): endpoints with error handling.
  bool err_handling = false;
  int depth = 4;  // ucp_am_bw: messages in flight (daqflow's pipeline depth)
  // {sender CPU, receiver CPU}: the tool's two processes are started under `taskset -c`, as
  // daqflow's source and sink agents are pinned by `cpu:`. Empty: not pinned. (mpi_bw's ranks
  // are placed by mpirun, with the options daqflow's own ranks get.)
  std::vector<int> cpus;
};

struct ReferenceResult {
  std::string tool;     // "iperf3"
  std::string command;  // the client command line
  double value = 0;     // MB/s (10^6 bytes) or microseconds of round trip
  // Latency: which statistic value is ("min" or "median"); daqflow's figure uses the same.
  std::string statistic;
  std::vector<std::pair<std::string, double>> details;  // other figures the tool printed
};

// Which tool measures (transport, kind); the error says what is not covered.
[[nodiscard]] Result<std::string> reference_tool(const std::string& transport,
                                                 const std::string& kind);

// Runs the reference once.
[[nodiscard]] Result<ReferenceResult> run_reference(const ReferenceSpec& spec);

// memcpy bandwidth for blocks of `size` bytes, copied back and forth between two buffers for
// about `seconds`: MB/s (10^6 bytes) of bytes copied.
[[nodiscard]] double measure_memcpy_mb_s(std::uint64_t size, double seconds);

// Parsers (exposed for tests). Each error quotes what was missing.
// iperf3 -J: the receiver's bits_per_second / 8e6.
[[nodiscard]] Result<double> parse_iperf3_json(const std::string& text);
// sockperf ping-pong: one-way latencies in microseconds, as it prints them.
struct SockperfLatency {
  double min_us = 0;
  double median_us = 0;
  double avg_us = 0;
};
[[nodiscard]] Result<SockperfLatency> parse_sockperf(const std::string& text);
// ucx_perftest: the "Final:" line. Bandwidth converted from its MB/s (2^20 bytes) to 10^6
// bytes; latency (overhead, usec) as printed: one-way for *_lat tests.
struct UcxPerf {
  double bandwidth_mb_s = 0;
  double latency_typical_us = 0;  // 50th percentile of the overhead
  double latency_avg_us = 0;
};
[[nodiscard]] Result<UcxPerf> parse_ucx_perftest(const std::string& text);
// fi_pingpong: the result row: MB/sec and usec/xfer (one-way).
struct FiPingpong {
  double mb_s = 0;
  double usec_per_xfer = 0;
};
[[nodiscard]] Result<FiPingpong> parse_fi_pingpong(const std::string& text);
// A number of a JSON object printed on one line of the output (fi_bw's "mb_s").
[[nodiscard]] Result<double> parse_json_number(const std::string& text, const std::string& key);
// A bandwidth table ("SIZE ... MB/s" per line): the last number of the line whose first number is
// size (mpi_bw, fi_bw).
[[nodiscard]] Result<double> parse_bandwidth_table(const std::string& text, std::uint64_t size);

}  // namespace daqflow::bench
