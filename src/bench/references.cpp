// Running the reference tools of `daqflow bench compare` as child processes on 127.0.0.1.
#include "daqflow/bench/references.hpp"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "daqflow/control/plan.hpp"
#include "daqflow/control/process.hpp"
#include "ports.hpp"

namespace daqflow::bench {

namespace {

using namespace std::chrono_literals;

struct Tool {
  const char* program;
  const char* package;
};

std::string find_program(const std::string& name) {
  if (name.find('/') != std::string::npos) return ::access(name.c_str(), X_OK) == 0 ? name : "";
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const auto candidate = std::filesystem::path(dir.empty() ? "." : dir) / name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return {};
}

Result<std::string> require(const Tool& tool) {
  auto path = find_program(tool.program);
  if (path.empty()) {
    return Error(ErrorCode::unavailable,
                 fmt::format("the reference tool {} is not installed (Debian package {}: "
                             "apt-get install {})",
                             tool.program, tool.package, tool.package));
  }
  return path;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string join(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) {
    const bool quote = a.find_first_of(" ;'\"") != std::string::npos;
    out += (out.empty() ? "" : " ") + (quote ? "'" + a + "'" : a);
  }
  return out;
}

// A server child that is ended (SIGTERM, then SIGKILL) when this goes out of scope. start()
// returns once it listens on TCP port `port` (< 0: after a short pause).
class Server {
 public:
  static Result<Server> start(const std::vector<std::string>& argv, const std::string& log,
                              int port) {
    auto child = control::ChildProcess::spawn(argv, log);
    if (!child) return child.error();
    Server s(std::move(*child));
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    if (port < 0) {
      // Nothing to watch: give it time to set up, and make sure it did not die doing so.
      std::this_thread::sleep_for(500ms);
      if (auto ended = s.child_.poll()) {
        return Error(ErrorCode::unavailable,
                     fmt::format("{} ended ({}): {}", argv.front(), ended->str(),
                                 control::tail_of_file(log, 5)));
      }
      return s;
    }
    while (!tcp_port_listening(port)) {
      if (auto ended = s.child_.poll()) {
        return Error(ErrorCode::unavailable,
                     fmt::format("{} ended ({}) before listening on port {}: {}", argv.front(),
                                 ended->str(), port, control::tail_of_file(log, 5)));
      }
      if (std::chrono::steady_clock::now() > deadline) {
        return Error(ErrorCode::timed_out,
                     fmt::format("{} does not listen on port {} after 10 s (log {})", argv.front(),
                                 port, log));
      }
      std::this_thread::sleep_for(20ms);
    }
    return s;
  }
  Server(Server&&) noexcept = default;
  Server& operator=(Server&&) noexcept = default;
  ~Server() {
    if (child_.pid() <= 0 || child_.exit_status()) return;
    if (child_.poll()) return;
    child_.signal(SIGTERM);
    if (!child_.wait_for(3000ms)) child_.kill_and_reap();
  }

 private:
  explicit Server(control::ChildProcess c) : child_(std::move(c)) {}
  control::ChildProcess child_;
};

// Runs a client to its end (at most timeout) and returns what it printed.
Result<std::string> run_client(const std::vector<std::string>& argv, const std::string& log,
                               std::chrono::milliseconds timeout) {
  std::error_code ec;
  std::filesystem::remove(log, ec);
  auto child = control::ChildProcess::spawn(argv, log);
  if (!child) return child.error();
  const auto status = child->wait_for(timeout);
  if (!status) {
    child->kill_and_reap();
    return Error(ErrorCode::timed_out, fmt::format("{} did not finish within {} s (log {})",
                                                   join(argv), timeout.count() / 1000, log));
  }
  if (!status->clean()) {
    return Error(ErrorCode::unavailable, fmt::format("{} {}: {}", join(argv), status->str(),
                                                     control::tail_of_file(log, 8)));
  }
  return read_file(log);
}

std::vector<std::string> with_env(const std::string& assignment, std::vector<std::string> argv) {
  if (assignment.empty()) return argv;
  argv.insert(argv.begin(), {"/usr/bin/env", assignment});
  return argv;
}

enum class Side { sender, receiver };

// What pinning the tools needs: two CPUs, and taskset. Checked after the tool itself, so that a
// missing tool is the error named first.
Result<void> can_pin(const ReferenceSpec& spec) {
  if (spec.cpus.empty()) return ok();
  if (spec.cpus.size() != 2) {
    return Error(fmt::format("reference tools are pinned to two CPUs (sender, receiver), not {}",
                             spec.cpus.size()));
  }
  if (auto taskset = require({"taskset", "util-linux"}); !taskset) return taskset.error();
  return ok();
}

// argv under `taskset -c CPU` when the spec pins the tools (can_pin() said it may).
std::vector<std::string> on_cpu(const ReferenceSpec& spec, Side side,
                                std::vector<std::string> argv) {
  if (spec.cpus.empty()) return argv;
  const int cpu = spec.cpus[side == Side::sender ? 0 : 1];
  argv.insert(argv.begin(), {find_program("taskset"), "-c", std::to_string(cpu)});
  return argv;
}

std::string log_path(const ReferenceSpec& spec, const std::string& name) {
  std::error_code ec;
  std::filesystem::create_directories(spec.log_dir, ec);
  return (std::filesystem::path(spec.log_dir) / name).string();
}

std::chrono::milliseconds client_timeout(const ReferenceSpec& spec) {
  return std::chrono::milliseconds(static_cast<long>(spec.duration_s * 1000 * 4) + 60000);
}

Result<ReferenceResult> iperf3(const ReferenceSpec& spec) {
  auto path = require({"iperf3", "iperf3"});
  if (!path) return path.error();
  if (auto pinning = can_pin(spec); !pinning) return pinning.error();
  const auto port = std::to_string(spec.port);
  const auto server_argv =
      on_cpu(spec, Side::receiver, {*path, "-s", "-B", "127.0.0.1", "-p", port});
  auto server = Server::start(server_argv, log_path(spec, "iperf3-server.log"), spec.port);
  if (!server) return server.error();
  const auto seconds = std::to_string(std::max(1L, std::lround(spec.duration_s)));
  const auto client = on_cpu(
      spec, Side::sender,
      {*path, "-c", "127.0.0.1", "-p", port, "-l", std::to_string(spec.size), "-t", seconds, "-J"});
  auto text = run_client(client, log_path(spec, "iperf3-client.json"), client_timeout(spec));
  if (!text) return text.error();
  auto mb_s = parse_iperf3_json(*text);
  if (!mb_s) return mb_s.error().context("iperf3");
  return ReferenceResult{"iperf3", join(client), *mb_s, "", {}};
}

Result<ReferenceResult> sockperf(const ReferenceSpec& spec) {
  auto path = require({"sockperf", "sockperf"});
  if (!path) return path.error();
  if (auto pinning = can_pin(spec); !pinning) return pinning.error();
  const auto port = std::to_string(spec.port);
  const auto server_argv =
      on_cpu(spec, Side::receiver, {*path, "server", "--tcp", "-i", "127.0.0.1", "-p", port});
  auto server = Server::start(server_argv, log_path(spec, "sockperf-server.log"), spec.port);
  if (!server) return server.error();
  const auto seconds = std::to_string(std::max(1L, std::lround(spec.duration_s)));
  const auto client = on_cpu(spec, Side::sender,
                             {*path, "ping-pong", "--tcp", "-i", "127.0.0.1", "-p", port, "-m",
                              std::to_string(spec.size), "-t", seconds});
  auto text = run_client(client, log_path(spec, "sockperf-client.log"), client_timeout(spec));
  if (!text) return text.error();
  auto lat = parse_sockperf(*text);
  if (!lat) return lat.error().context("sockperf");
  // sockperf prints one-way latencies (half the round trip); daqflow measures round trips.
  return ReferenceResult{"sockperf",
                         join(client),
                         2 * lat->min_us,
                         "min",
                         {{"rtt_median_us", 2 * lat->median_us}, {"rtt_avg_us", 2 * lat->avg_us}}};
}

Result<ReferenceResult> ucx_perftest(const ReferenceSpec& spec) {
  auto path = require({"ucx_perftest", "ucx-utils"});
  if (!path) return path.error();
  if (auto pinning = can_pin(spec); !pinning) return pinning.error();
  const auto port = std::to_string(spec.port);
  const std::string tls = spec.ucx_tls.empty() ? "" : "UCX_TLS=" + spec.ucx_tls;
  std::vector<std::string> server_args{*path, "-p", port};
  if (spec.err_handling) server_args.emplace_back("-e");
  const auto server_argv = on_cpu(spec, Side::receiver, with_env(tls, server_args));
  auto server = Server::start(server_argv, log_path(spec, "ucx_perftest-server.log"), spec.port);
  if (!server) return server.error();
  const bool bw = spec.kind != "latency";
  // About duration_s at the expected rates: GB/s for bandwidth; for latency a conservative
  // 1 ms per round trip (UCX over tcp on a loaded machine), as a median needs few.
  const double iters =
      bw ? spec.duration_s * 2e9 / static_cast<double>(std::max<std::uint64_t>(spec.size, 1))
         : spec.duration_s * 1e3;
  const auto n = std::to_string(std::clamp<long>(std::lround(iters), 100, 10000000));
  std::vector<std::string> client_args{*path, "127.0.0.1",
                                       "-p",  port,
                                       "-t",  bw ? "tag_bw" : "tag_lat",
                                       "-s",  std::to_string(spec.size),
                                       "-n",  n};
  if (spec.err_handling) client_args.emplace_back("-e");
  const auto client = on_cpu(spec, Side::sender, with_env(tls, client_args));
  auto text = run_client(client, log_path(spec, "ucx_perftest-client.log"), client_timeout(spec));
  if (!text) return text.error();
  auto perf = parse_ucx_perftest(*text);
  if (!perf) return perf.error().context("ucx_perftest");
  if (bw) return ReferenceResult{"ucx_perftest", join(client), perf->bandwidth_mb_s, "", {}};
  // tag_lat reports half the round trip; its percentile is the closest to a median it prints.
  return ReferenceResult{"ucx_perftest",
                         join(client),
                         2 * perf->latency_typical_us,
                         "median",
                         {{"rtt_avg_us", 2 * perf->latency_avg_us}}};
}

Result<ReferenceResult> fabtests(const ReferenceSpec& spec) {
  const std::string provider = spec.ofi_provider.empty() ? "tcp;ofi_rxm" : spec.ofi_provider;
  const std::string own = (std::filesystem::path(spec.bin_dir) / "fi_bw").string();
  if (auto pinning = can_pin(spec); !pinning) return pinning.error();
  if (spec.kind != "latency" && ::access(own.c_str(), X_OK) == 0) {
    // daqflow's raw-libfabric bandwidth program (bench/reference/fi_bw.cpp): a window of 64
    // tagged sends at a time, as fabtests' bandwidth tests do.
    const auto iters = std::to_string(std::clamp<long>(
        std::lround(spec.duration_s * 2e9 / static_cast<double>(spec.size)), 100, 10000000));
    const std::vector<std::string> common = {
        "-p", provider, "-S", std::to_string(spec.size), "-W", "64",
        "-n", iters,    "-P", std::to_string(spec.port)};
    std::vector<std::string> receiver = {own, "-s"};
    receiver.insert(receiver.end(), common.begin(), common.end());
    const auto server_argv = on_cpu(spec, Side::receiver, std::move(receiver));
    // tcp-based providers listen on the port; shm has nothing to wait for but the process.
    auto server = Server::start(server_argv, log_path(spec, "fi_bw-server.log"),
                                provider == "shm" ? -1 : spec.port);
    if (!server) return server.error();
    std::vector<std::string> sender = {own};
    sender.insert(sender.end(), common.begin(), common.end());
    const auto client = on_cpu(spec, Side::sender, std::move(sender));
    auto text = run_client(client, log_path(spec, "fi_bw-client.log"), client_timeout(spec));
    if (!text) return text.error();
    auto mb_s = parse_json_number(*text, "mb_s");
    if (!mb_s) return mb_s.error().context("fi_bw");
    return ReferenceResult{"fi_bw", join(client), *mb_s, "", {}};
  }
  auto path = require({"fi_pingpong", "libfabric-bin"});
  if (!path) return path.error();
  const auto port = std::to_string(spec.port);
  const bool bw = spec.kind != "latency";
  const double iters =
      bw ? spec.duration_s * 2e8 / static_cast<double>(std::max<std::uint64_t>(spec.size, 1))
         : spec.duration_s * 200;  // rxm over tcp takes ~1 ms per transfer here
  const auto n = std::to_string(std::clamp<long>(std::lround(iters), 10, 10000000));
  const std::vector<std::string> common = {
      "-p", provider, "-e", "rdm", "-S", std::to_string(spec.size), "-I", n};
  std::vector<std::string> receiver = {*path, "-B", port};
  receiver.insert(receiver.end(), common.begin(), common.end());
  const auto server_argv = on_cpu(spec, Side::receiver, std::move(receiver));
  auto server = Server::start(server_argv, log_path(spec, "fi_pingpong-server.log"), spec.port);
  if (!server) return server.error();
  std::vector<std::string> sender = {*path, "-P", port};
  sender.insert(sender.end(), common.begin(), common.end());
  sender.emplace_back("127.0.0.1");
  const auto client = on_cpu(spec, Side::sender, std::move(sender));
  auto text = run_client(client, log_path(spec, "fi_pingpong-client.log"), client_timeout(spec));
  if (!text) return text.error();
  auto pp = parse_fi_pingpong(*text);
  if (!pp) return pp.error().context("fi_pingpong");
  if (bw) return ReferenceResult{"fi_pingpong", join(client), pp->mb_s, "", {}};
  return ReferenceResult{"fi_pingpong", join(client), 2 * pp->usec_per_xfer, "median", {}};
}

Result<ReferenceResult> mpi_bw(const ReferenceSpec& spec) {
  if (std::getenv("DAQFLOW_MPIRUN") == nullptr) {
    if (auto mpirun = require({"mpirun", "openmpi-bin"}); !mpirun) return mpirun.error();
  }
  const std::string program = (std::filesystem::path(spec.bin_dir) / "mpi_bw").string();
  if (::access(program.c_str(), X_OK) != 0) {
    return Error(ErrorCode::not_found,
                 "the MPI reference " + program +
                     " is not built (bench/reference/mpi_bw.cpp, target mpi_bw)");
  }
  if (spec.buffers < 1 || spec.buffers > 64) {
    return Error("mpi_bw: buffers must be 1 to 64 (its window), not " +
                 std::to_string(spec.buffers));
  }
  // The options daqflow's own ranks get (`daqflow run`), so that both run alike.
  std::vector<std::string> cmd = control::mpirun_command();
  for (const std::string& a :
       {std::string("-np"), std::string("2"), program, std::string("--size"),
        std::to_string(spec.size), std::string("--buffers"), std::to_string(spec.buffers)}) {
    cmd.push_back(a);
  }
  auto text = run_client(cmd, log_path(spec, "mpi_bw.log"), client_timeout(spec));
  if (!text) return text.error();
  auto mb_s = parse_bandwidth_table(*text, spec.size);
  if (!mb_s) return mb_s.error().context("mpi_bw");
  return ReferenceResult{"mpi_bw", join(cmd), *mb_s, "", {}};
}

// daqflow's ZeroMQ program (bench/reference/zmq_bw.cpp): PUSH to PULL over tcp, or over ipc
// when compared with shm. The sender starts first (its connect retries until the receiver binds);
// the receiver measures and prints the result.
Result<ReferenceResult> zeromq(const ReferenceSpec& spec) {
  const std::string program = (std::filesystem::path(spec.bin_dir) / "zmq_bw").string();
  if (::access(program.c_str(), X_OK) != 0) {
    return Error(ErrorCode::not_found,
                 "the ZeroMQ reference " + program +
                     " is not built (bench/reference/zmq_bw.cpp, target zmq_bw; Debian package "
                     "libzmq3-dev)");
  }
  if (spec.kind != "stream") {
    return Error("zeromq measures message rates (--kind stream), not " + spec.kind);
  }
  if (auto pinning = can_pin(spec); !pinning) return pinning.error();
  std::string address;
  if (spec.transport == "tcp") {
    address = fmt::format("tcp://127.0.0.1:{}", spec.port);
  } else if (spec.transport == "shm" || spec.transport == "inproc") {
    address = fmt::format("ipc:///tmp/daqflow-zmq_bw-{}-{}", ::getpid(), spec.port);
  } else {
    return Error("zeromq is a reference for tcp (over tcp) and shm (over ipc), not " +
                 spec.transport);
  }
  const auto size = std::to_string(spec.size);
  const auto sender_argv = on_cpu(spec, Side::sender,
                                  {program, "--send", address, "--size", size, "--duration",
                                   fmt::format("{:g}", spec.duration_s)});
  auto sender = Server::start(sender_argv, log_path(spec, "zmq_bw-sender.log"), -1);
  if (!sender) return sender.error();
  const auto receiver =
      on_cpu(spec, Side::receiver, {program, "--receive", address, "--size", size});
  auto text = run_client(receiver, log_path(spec, "zmq_bw-receiver.log"), client_timeout(spec));
  if (address.starts_with("ipc://")) {
    std::error_code ec;
    std::filesystem::remove(address.substr(6), ec);
  }
  if (!text) return text.error();
  auto mb_s = parse_json_number(*text, "mb_s");
  if (!mb_s) return mb_s.error().context("zmq_bw");
  auto msg_s = parse_json_number(*text, "msg_s");
  if (!msg_s) return msg_s.error().context("zmq_bw");
  return ReferenceResult{
      "zeromq", join(sender_argv) + " & " + join(receiver), *mb_s, "", {{"msg_s", *msg_s}}};
}

// daqflow's UCP program (bench/reference/ucp_am_bw.cpp) moving data as the ucx transport does:
// active messages between endpoints made through the connection manager, a 40-byte header, the
// given number of buffers a side, written before the run and at both ends of every message, as
// many in flight as daqflow's pipeline depth; error mode PEER with err_handling. Where
// ucx_perftest sends one buffer it never writes (the kernel's zero page) and receives into one,
// this is the same transfer with real data (docs/transports.md, "Over tcp, 1 MiB"). The receiver
// starts first; the sender's connection is retried until it listens, then it measures and prints.
Result<ReferenceResult> ucp_am_bw(const ReferenceSpec& spec) {
  const std::string program = (std::filesystem::path(spec.bin_dir) / "ucp_am_bw").string();
  if (::access(program.c_str(), X_OK) != 0) {
    return Error(ErrorCode::not_found,
                 "the UCP reference " + program +
                     " is not built (bench/reference/ucp_am_bw.cpp, target ucp_am_bw; Debian "
                     "package libucx-dev)");
  }
  if (spec.kind != "stream" || spec.transport != "ucx") {
    return Error("ucp_am_bw is a stream reference for the ucx transport, not " + spec.kind +
                 " over " + spec.transport);
  }
  if (spec.buffers < 1 || spec.buffers > 64) {
    return Error("ucp_am_bw: buffers must be 1 to 64, not " + std::to_string(spec.buffers));
  }
  if (auto pinning = can_pin(spec); !pinning) return pinning.error();
  const std::string tls = spec.ucx_tls.empty() ? "" : "UCX_TLS=" + spec.ucx_tls;
  // About duration_s at 2 GB/s or more, as for ucx_perftest.
  const double messages =
      spec.duration_s * 2e9 / static_cast<double>(std::max<std::uint64_t>(spec.size, 1));
  std::vector<std::string> options{
      "--size",    std::to_string(spec.size),
      "--count",   std::to_string(std::clamp<long>(std::lround(messages), 100, 10000000)),
      "--depth",   std::to_string(std::max(spec.depth, 1)),
      "--buffers", std::to_string(spec.buffers),
      "--header",  "40",
      "--written", "--cm"};
  if (spec.err_handling) options.emplace_back("--peer");
  const auto argv = [&](std::vector<std::string> head) {
    head.insert(head.end(), options.begin(), options.end());
    return head;
  };
  const auto receiver_argv = on_cpu(
      spec, Side::receiver, with_env(tls, argv({program, "--receive", std::to_string(spec.port)})));
  auto receiver = Server::start(receiver_argv, log_path(spec, "ucp_am_bw-receiver.log"), -1);
  if (!receiver) return receiver.error();
  const auto sender =
      on_cpu(spec, Side::sender,
             with_env(tls, argv({program, "--send", fmt::format("127.0.0.1:{}", spec.port)})));
  auto text = run_client(sender, log_path(spec, "ucp_am_bw-sender.log"), client_timeout(spec));
  if (!text) return text.error();
  auto mb_s = parse_json_number(*text, "mb_s");
  if (!mb_s) return mb_s.error().context("ucp_am_bw");
  return ReferenceResult{"ucp_am_bw", join(receiver_argv) + " & " + join(sender), *mb_s, "", {}};
}

}  // namespace

Result<std::string> reference_tool(const std::string& transport, const std::string& kind) {
  if (kind == "memcpy") return std::string("memcpy");
  if (kind == "stream") {
    if (transport == "tcp") return std::string("iperf3");
    if (transport == "ucx") return std::string("ucx_perftest");
    if (transport == "ofi") return std::string("fabtests");
    if (transport == "mpi") return std::string("mpi_bw");
    if (transport == "inproc" || transport == "shm") return std::string("memcpy");
  }
  if (kind == "latency") {
    if (transport == "tcp") return std::string("sockperf");
    if (transport == "ucx") return std::string("ucx_perftest");
    if (transport == "ofi") return std::string("fabtests");
  }
  if (kind != "stream" && kind != "latency") {
    return Error("unknown compare kind '" + kind + "' (expected stream, latency or memcpy)");
  }
  return Error("no " + kind + " reference for transport '" + transport +
               "' (stream: tcp iperf3, ucx ucx_perftest, ofi fabtests, mpi mpi_bw, inproc and "
               "shm memcpy; latency: tcp sockperf, ucx ucx_perftest, ofi fi_pingpong)");
}

Result<ReferenceResult> run_reference(const ReferenceSpec& spec) {
  auto tool = spec.tool.empty() ? reference_tool(spec.transport, spec.kind)
                                : Result<std::string>(spec.tool);
  if (!tool) return tool.error();
  if (*tool == "memcpy") {
    return ReferenceResult{
        "memcpy",
        fmt::format("built-in memcpy of {} B blocks for {:g} s", spec.size, spec.duration_s),
        measure_memcpy_mb_s(spec.size, spec.duration_s),
        "",
        {}};
  }
  if (*tool == "iperf3") return iperf3(spec);
  if (*tool == "sockperf") return sockperf(spec);
  if (*tool == "ucx_perftest") return ucx_perftest(spec);
  if (*tool == "fabtests") return fabtests(spec);
  if (*tool == "zeromq") return zeromq(spec);
  if (*tool == "ucp_am_bw") return ucp_am_bw(spec);
  return mpi_bw(spec);
}

}  // namespace daqflow::bench
