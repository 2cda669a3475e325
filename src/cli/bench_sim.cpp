// daqflow bench sim: simulated builders at scale.

#include <memory>
#include <string>

#include "cli/bench_support.hpp"

namespace daqflow::cli {

void add_bench_sim(CLI::App& bench_cmd) {
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

}  // namespace daqflow::cli
