// daqflow bench compare: daqflow against a reference tool, interleaved.

#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <string>

#include "cli/bench_support.hpp"

namespace daqflow::cli {

void add_bench_compare(CLI::App& bench_cmd) {
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
  add_ranged(cmd, "--duration", a->options.duration_s, "seconds per measurement", 0.5, 3600.0);
  add_ranged(cmd, "--depth", a->common.cluster.pipeline_depth, "stream: pipelining depth", 1, 4096);
  add_ranged(cmd, "--iterations", a->options.iterations, "latency: timed round trips", 1, 10000000);
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
  add_ranged(cmd, "--rounds", a->options.rounds,
             "daqflow figures, each followed by another reference run; medians compared", 1, 20);
  add_ranged(cmd, "--reference-buffers", a->options.reference_buffers,
             "mpi_bw, ucp_am_bw: distinct buffers per side (1 as osu_bw and ucx_perftest, "
             "which keeps them in cache)",
             1, 64);
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

}  // namespace daqflow::cli
