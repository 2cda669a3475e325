// daqflow bench evb: the event builder.

#include <cstdio>
#include <memory>
#include <string>

#include "cli/bench_support.hpp"

namespace daqflow::cli {

void add_bench_evb(CLI::App& bench_cmd) {
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
  add_ranged(cmd, "--feds", a->options.feds_per_ru, "FEDs per RU", 1, 64);
  add_ranged(cmd, "--events-per-request", a->options.events_per_request, "events per block", 1,
             4096);
  add_ranged(cmd, "--duration", a->options.duration_s, "seconds per point", 0.5, 3600.0);
  add_ranged(cmd, "--dashboard-clients", a->options.dashboard_clients,
             "the cost of monitoring: the first point, without and then with this many "
             "dashboards open on the EVM's executive, --rounds times; medians compared",
             0, 64);
  cmd->add_option("--readout", a->options.readout,
                  "where fragments come from: emulator (built in), plugin (the emulator's "
                  "fragments through the readout plugin ABI) or both (the first point with "
                  "each, --rounds times; medians compared)")
      ->check(CLI::IsMember({"emulator", "plugin", "both"}))
      ->capture_default_str();
  add_ranged(cmd, "--rounds", a->options.rounds,
             "rounds of each point: the raw stream of its shape, then the builder (with "
             "--dashboard-clients or --readout both: of the pair); medians compared",
             1, 20);
  cmd->callback([a] {
    auto& o = a->options;
    o.cluster = a->common.settings();
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

}  // namespace daqflow::cli
