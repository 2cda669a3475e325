// daqflow bench evb: the event builder over its topologies (N RU x M BU, RUBU) and fragment
// sizes, BUs discarding; event rate, throughput and the per-event cost as the builder grows,
// each point in rounds beside the raw stream of its shape (evb_stream_shape), medians compared.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <stop_token>
#include <thread>
#include <vector>

#include "cluster_run.hpp"
#include "daqflow/bench/runners.hpp"
#include "daqflow/bench/sweep.hpp"
#include "daqflow/control/client.hpp"
#include "daqflow/runtime/params.hpp"

namespace daqflow::bench {

namespace {

std::vector<EvbShape> shapes(const EvbOptions& o) {
  std::vector<EvbShape> out;
  for (const auto size : o.fragment_sizes) {
    for (const auto& [rus, bus] : o.topologies) {
      EvbShape s;
      s.rus = rus;
      s.bus = bus;
      s.fragment_mean = size;
      out.push_back(s);
    }
    for (const int nodes : o.rubu) {
      EvbShape s;
      s.rus = nodes;
      s.bus = nodes;
      s.rubu = true;
      s.fragment_mean = size;
      out.push_back(s);
    }
  }
  for (auto& s : out) {
    s.feds_per_ru = o.feds_per_ru;
    s.events_per_request = o.events_per_request;
  }
  return out;
}

std::string topology_name(const EvbShape& s) {
  return s.rubu ? fmt::format("rubu{}", s.rus) : fmt::format("{}x{}", s.rus, s.bus);
}

std::string topologies_text(const EvbOptions& o) {
  std::vector<std::string> t;
  for (const auto& [rus, bus] : o.topologies) t.push_back(fmt::format("{}x{}", rus, bus));
  return fmt::format("{}", fmt::join(t, ","));
}

}  // namespace

std::string evb_stem(const EvbOptions& o) {
  const std::size_t configs = o.topologies.size() + o.rubu.size();
  std::string which;
  if (configs == 1) {
    which = o.topologies.empty()
                ? fmt::format("rubu{}", o.rubu.front())
                : fmt::format("{}x{}", o.topologies.front().first, o.topologies.front().second);
  } else {
    which = "scaling";
  }
  return fmt::format("evb-{}-{}", which, o.cluster.transport);
}

std::string command_line(const EvbOptions& o) {
  std::string cmd = fmt::format("daqflow bench evb --transport {}", o.cluster.transport);
  if (!o.topologies.empty()) cmd += " --topologies " + topologies_text(o);
  if (!o.rubu.empty()) cmd += fmt::format(" --rubu {}", fmt::join(o.rubu, ","));
  cmd += fmt::format(
      " --fragment-sizes {} --feds {} --events-per-request {} --duration {:g} --idle {} "
      "--port-base {}",
      format_sweep(o.fragment_sizes), o.feds_per_ru, o.events_per_request, o.duration_s,
      o.cluster.idle, o.cluster.port_base);
  if (o.dashboard_clients > 0) cmd += fmt::format(" --dashboard-clients {}", o.dashboard_clients);
  if (o.readout != "emulator") cmd += " --readout " + o.readout;
  cmd += fmt::format(" --rounds {}", o.rounds);
  cmd += cluster_options(o.cluster);
  return cmd;
}

// What open dashboards ask of the executive they are opened on (web/dashboard.js): every
// context's snapshot, once a second each, the clients spread over the second.
class DashboardClients {
 public:
  DashboardClients(int clients, std::uint16_t port) {
    for (int i = 0; i < clients; ++i) {
      const auto offset = std::chrono::milliseconds(1000 * i / clients);
      threads_.emplace_back([this, port, offset](const std::stop_token& stop) {
        const control::ControlClient http(control::HostPort{"127.0.0.1", port},
                                          std::chrono::milliseconds(300), std::chrono::seconds(2));
        auto next = std::chrono::steady_clock::now() + offset;
        std::mutex mutex;
        std::condition_variable_any wake;
        while (!stop.stop_requested()) {
          std::unique_lock lock(mutex);
          wake.wait_until(lock, stop, next, [] { return false; });
          if (stop.stop_requested()) break;
          lock.unlock();
          const auto res = http.call("GET", "/api/v1/snapshots");
          if (res && res->status == 200) answered_.fetch_add(1, std::memory_order_relaxed);
          next += std::chrono::seconds(1);
        }
      });
    }
  }
  [[nodiscard]] std::uint64_t answered() const { return answered_.load(); }

 private:
  std::atomic<std::uint64_t> answered_{0};
  std::vector<std::jthread> threads_;  // last: stopped and joined first
};

// Two ways of running the first shape, compared: rounds of side 0 then side 1, medians.
struct Pair {
  std::string stem;                      // of the result files
  std::string title;                     // of the plot
  std::string column;                    // what tells the sides apart in the rows
  std::array<std::string, 2> sides;      // their names
  std::array<nlohmann::json, 2> values;  // their value in `column`
  std::string extra_column;              // a count the side's run gives ("" for none)
  nlohmann::json params;                 // beyond the shape's
  // Runs side i as `name` on cluster (its output folder and message size set); returns the
  // summary and the count of extra_column.
  std::function<Result<std::pair<control::RunSummary, std::uint64_t>>(
      int side, ClusterSettings cluster, EvbShape shape, const std::string& name)>
      run;
};

Result<BenchOutput> run_evb_pair(const EvbOptions& o, const EvbShape& s, BenchEnv& env,
                                 const Pair& pair) {
  BenchOutput out;
  out.result = cluster_result_set("evb", pair.stem, o.cluster, command_line(o));
  ResultSet& r = out.result;
  r.params.update(nlohmann::json{{"topology", topology_name(s)},
                                 {"fragment_mean", s.fragment_mean},
                                 {"feds_per_ru", o.feds_per_ru},
                                 {"events_per_request", o.events_per_request},
                                 {"duration_s", o.duration_s},
                                 {"rounds", o.rounds},
                                 {"output", "discard"}});
  r.params.update(pair.params);
  r.columns = {"round", pair.column, "events_per_s", "mb_s"};
  if (!pair.extra_column.empty()) r.columns.push_back(pair.extra_column);
  std::array<std::vector<double>, 2> rates;
  std::array<Series, 2> series{Series{pair.sides[0], {}, Series::Style::points_and_line},
                               Series{pair.sides[1], {}, Series::Style::points_and_line}};
  const int total = 2 * o.rounds;
  for (int round = 1; round <= o.rounds; ++round) {
    for (int side = 0; side < 2; ++side) {
      const std::string what = fmt::format("evb {} {} round {}, {}", topology_name(s),
                                           o.cluster.transport, round, pair.sides[side]);
      if (env.progress != nullptr) env.progress->begin(2 * (round - 1) + side + 1, total, what);
      const std::string name = fmt::format("{}-{}-{}", r.stem, round, side);
      ClusterSettings cluster = o.cluster;
      cluster.output_dir = point_dir(env, name);
      cluster.max_message_size = evb_max_message_size(s);
      auto ran = pair.run(side, cluster, s, name);
      if (!ran) return ran.error().context(what);
      runtime::ParamReader evm(app_results(ran->first, "evm0"), "evm0", "result");
      const double rate = evm.get<double>("event_rate_hz");
      const double mb_s = evm.get<double>("throughput_mb_s");
      if (auto read = evm.status(); !read) return read.error().context(what);
      if (rate <= 0) return Error(what + ": no event was built (raise --duration)");
      nlohmann::json row = {round, pair.values[side], rate, mb_s};
      if (!pair.extra_column.empty()) row.push_back(ran->second);
      add_row(r, std::move(row));
      rates[side].push_back(rate);
      series[side].points.emplace_back(round, rate);
      if (env.progress != nullptr) {
        env.progress->line(fmt::format("{}: {:.0f} events/s, {:.1f} MB/s", what, rate, mb_s));
      }
    }
  }
  const double m0 = median(rates[0]);
  const double m1 = median(rates[1]);
  r.summary = {{"events_per_s_" + pair.column + "_0", m0},
               {"events_per_s_" + pair.column + "_1", m1},
               {"sides", pair.sides},
               {"ratio", m0 > 0 ? m1 / m0 : 0.0}};
  if (env.progress != nullptr) {
    env.progress->line(fmt::format("median {:.0f} events/s {}, {:.0f} {}: ratio {:.3f}", m0,
                                   pair.sides[0], m1, pair.sides[1], m0 > 0 ? m1 / m0 : 0.0));
  }
  out.plot.title = pair.title;
  out.plot.x_label = "round";
  out.plot.y_label = "events built per second";
  out.plot.series = {std::move(series[0]), std::move(series[1])};
  return out;
}

// bench evb --dashboard-clients N: rounds of the first shape without, then with, N dashboards.
Result<BenchOutput> run_evb_dashboard_cost(const EvbOptions& o, const EvbShape& s, BenchEnv& env) {
  Pair pair;
  pair.stem = fmt::format("evb-dashboard-{}", o.cluster.transport);
  pair.title = fmt::format("Event builder over {} with and without {} dashboards",
                           o.cluster.transport, o.dashboard_clients);
  pair.column = "dashboard_clients";
  pair.sides = {"no dashboard", fmt::format("{} dashboards", o.dashboard_clients)};
  pair.values = {0, o.dashboard_clients};
  pair.extra_column = "snapshots_answered";
  pair.params = {{"dashboard_clients", o.dashboard_clients}};
  pair.run = [&](int side, ClusterSettings cluster, EvbShape shape,
                 const std::string& name) -> Result<std::pair<control::RunSummary, std::uint64_t>> {
    // The EVM's context is the first: its control port is the base.
    std::optional<DashboardClients> dashboards;
    if (side == 1) {
      dashboards.emplace(o.dashboard_clients, static_cast<std::uint16_t>(cluster.port_base));
    }
    auto summary = run_point(evb_yaml(cluster, shape), name, o.duration_s, env);
    const std::uint64_t answered = dashboards ? dashboards->answered() : 0;
    dashboards.reset();
    if (!summary) return summary.error();
    return std::pair{std::move(*summary), answered};
  };
  return run_evb_pair(o, s, env, pair);
}

// The readout plugin that gives the emulator's fragments: beside daqflow's libraries.
std::string emulated_readout_plugin(const BenchEnv& env) {
  return (std::filesystem::path(env.self).parent_path().parent_path() / "lib" /
          "libdaqflow_emulated_readout.so")
      .lexically_normal()
      .string();
}

// bench evb --readout both: rounds of the first shape with the emulator, then with the
// emulator's fragments through the readout plugin ABI.
Result<BenchOutput> run_evb_readout_cost(const EvbOptions& o, const EvbShape& s, BenchEnv& env) {
  const std::string plugin = emulated_readout_plugin(env);
  Pair pair;
  pair.stem = fmt::format("evb-readout-{}", o.cluster.transport);
  pair.title = fmt::format(
      "Event builder over {}: the FED emulator built in and as a readout "
      "plugin",
      o.cluster.transport);
  pair.column = "readout";
  pair.sides = {"emulator", "readout plugin"};
  pair.values = {"emulator", "plugin"};
  pair.params = {{"readout", "both"}, {"readout_plugin", plugin}};
  pair.run = [&](int side, ClusterSettings cluster, EvbShape shape,
                 const std::string& name) -> Result<std::pair<control::RunSummary, std::uint64_t>> {
    if (side == 1) shape.readout_plugin = plugin;
    auto summary = run_point(evb_yaml(cluster, shape), name, o.duration_s, env);
    if (!summary) return summary.error();
    return std::pair{std::move(*summary), std::uint64_t{0}};
  };
  return run_evb_pair(o, s, env, pair);
}

namespace {

struct EvbRun {
  double events_per_s = 0;
  double mb_s = 0;
};

// One run of the builder: the EVM's event rate and throughput.
Result<EvbRun> run_evb_point(const EvbOptions& o, const EvbShape& s, const std::string& name,
                             const std::string& what, BenchEnv& env) {
  ClusterSettings cluster = o.cluster;
  cluster.output_dir = point_dir(env, name);
  cluster.max_message_size = evb_max_message_size(s);
  auto summary = run_point(evb_yaml(cluster, s), name, o.duration_s, env);
  if (!summary) return summary.error().context(what);
  runtime::ParamReader evm(app_results(*summary, "evm0"), "evm0", "result");
  EvbRun run{evm.get<double>("event_rate_hz"), evm.get<double>("throughput_mb_s")};
  const double built = static_cast<double>(evm.get<std::uint64_t>("events_built") +
                                           evm.get<std::uint64_t>("events_incomplete"));
  const double seconds = evm.get<double>("seconds");
  const double bytes = static_cast<double>(evm.get<std::uint64_t>("bytes_built"));
  if (auto read = evm.status(); !read) return read.error().context(what);
  if (run.events_per_s <= 0 && built > 0 && seconds > 0) {
    // Blocks so large that none completed inside the sampled intervals: the average over the
    // whole run is the only figure there is.
    run = EvbRun{built / seconds, bytes / 1e6 / seconds};
    if (env.progress != nullptr) {
      env.progress->line(what +
                         ": too few events for sampling; figures averaged over the run "
                         "(raise --duration)");
    }
  }
  if (run.events_per_s <= 0) {
    return Error(what + ": no event was built (see " + cluster.output_dir + ")");
  }
  return run;
}

// The raw stream of the builder's shape (evb_stream_shape): every sink's bytes per second
// summed, and the events per second its messages would carry.
Result<EvbRun> run_evb_stream_point(const EvbOptions& o, const EvbShape& s, const std::string& name,
                                    const std::string& what, BenchEnv& env) {
  const StreamShape shape = evb_stream_shape(s);
  ClusterSettings cluster = o.cluster;
  cluster.output_dir = point_dir(env, name);
  cluster.max_message_size = evb_max_message_size(s);
  auto summary = run_point(stream_yaml(cluster, shape), name, o.duration_s, env);
  if (!summary) return summary.error().context(what);
  auto rates = receiver_rates(*summary, s.rubu ? s.rus : s.bus);
  if (!rates) return rates.error().context(fmt::format("{} (see {})", what, cluster.output_dir));
  const StreamFigures f = combine_receivers(*rates);
  // A message is one readout's part of a block: a block's events arrive once every readout's
  // part of it has.
  return EvbRun{f.messages_per_s * s.events_per_request / s.rus, f.total_mean};
}

// The result set of a sweep, before its rows.
ResultSet evb_result_set(const EvbOptions& o) {
  ResultSet r = cluster_result_set("evb", evb_stem(o), o.cluster, command_line(o));
  std::vector<std::string> topo;
  for (const auto& [rus, bus] : o.topologies) topo.push_back(fmt::format("{}x{}", rus, bus));
  r.params.update(nlohmann::json{{"topologies", topo},
                                 {"rubu", o.rubu},
                                 {"fragment_sizes", o.fragment_sizes},
                                 {"fragment_dist", "lognormal, sd = mean / 2"},
                                 {"readout", o.readout},
                                 {"feds_per_ru", o.feds_per_ru},
                                 {"events_per_request", o.events_per_request},
                                 {"duration_s", o.duration_s},
                                 {"rounds", o.rounds},
                                 {"output", "discard"},
                                 {"reference", kEvbStreamReference}});
  r.columns = {"rus", "bus",           "rubu",         "feds_per_ru", "fragment_mean", "round",
               "run", "message_bytes", "events_per_s", "mb_s",        "us_per_event"};
  return r;
}

}  // namespace

Result<BenchOutput> run_evb(const EvbOptions& o, BenchEnv& env) {
  if (auto ok = check_transport(o.cluster.transport); !ok) return ok.error();
  auto all = shapes(o);
  if (o.readout == "plugin") {
    for (auto& s : all) s.readout_plugin = emulated_readout_plugin(env);
  }
  if (all.empty()) return Error("evb: no topology (give --topologies and/or --rubu)");
  for (const auto& s : all) {
    if (s.rus < 1 || s.bus < 1) {
      return Error("evb: topology " + topology_name(s) + " needs at least one RU and one BU");
    }
  }

  if (o.dashboard_clients > 0) return run_evb_dashboard_cost(o, all.front(), env);
  if (o.readout == "both") return run_evb_readout_cost(o, all.front(), env);

  BenchOutput out;
  out.result = evb_result_set(o);
  ResultSet& r = out.result;
  nlohmann::json points = nlohmann::json::array();
  std::vector<std::pair<std::string, Series>> series;
  const int total = static_cast<int>(all.size()) * o.rounds * 2;
  int done = 0;
  for (std::size_t i = 0; i < all.size(); ++i) {
    const EvbShape& s = all[i];
    const std::uint64_t message = evb_stream_shape(s).message_size;
    std::array<std::vector<double>, 2> mb_s;
    std::vector<double> events_per_s;
    for (int round = 1; round <= o.rounds; ++round) {
      for (int side = 0; side < 2; ++side) {
        const char* run = side == 0 ? "stream" : "evb";
        const std::string what =
            fmt::format("evb {} {} fragments {} B round {}, {}", topology_name(s),
                        o.cluster.transport, s.fragment_mean, round, run);
        if (env.progress != nullptr) env.progress->begin(++done, total, what);
        const std::string name = fmt::format("{}-{}-{}-{}", r.stem, i, round, run);
        auto ran = side == 0 ? run_evb_stream_point(o, s, name, what, env)
                             : run_evb_point(o, s, name, what, env);
        if (!ran) return ran.error();
        const double us = 1e6 / ran->events_per_s;
        add_row(r, {s.rus, s.bus, s.rubu ? 1 : 0, s.feds_per_ru, s.fragment_mean, round, run,
                    message, ran->events_per_s, ran->mb_s, us});
        mb_s[side].push_back(ran->mb_s);
        if (side == 1) events_per_s.push_back(ran->events_per_s);
        if (env.progress != nullptr) {
          env.progress->line(fmt::format("{}: {:.0f} events/s, {:.1f} MB/s, {:.2f} us/event", what,
                                         ran->events_per_s, ran->mb_s, us));
        }
      }
    }
    const double stream = median(mb_s[0]);
    const double evb = median(mb_s[1]);
    const double rate = median(events_per_s);
    const double ratio = stream > 0 ? evb / stream : 0.0;
    points.push_back({{"topology", topology_name(s)},
                      {"fragment_mean", s.fragment_mean},
                      {"message_bytes", message},
                      {"stream_mb_s", stream},
                      {"evb_mb_s", evb},
                      {"evb_events_per_s", rate},
                      {"evb_to_stream", ratio}});
    if (i == 0) {
      r.summary = {{"events_per_s", rate},
                   {"mb_s", evb},
                   {"us_per_event", 1e6 / rate},
                   {"evb_to_stream", ratio}};
    }
    if (env.progress != nullptr) {
      env.progress->line(fmt::format("{} {} B medians: stream {:.1f} MB/s, evb {:.1f} MB/s: {:.3f}",
                                     topology_name(s), s.fragment_mean, stream, evb, ratio));
    }
    const std::string key =
        fmt::format("{}{} B fragments", s.rubu ? "RUBU, " : "", s.fragment_mean);
    auto it =
        std::find_if(series.begin(), series.end(), [&](const auto& e) { return e.first == key; });
    if (it == series.end()) {
      series.emplace_back(key, Series{key, {}, Series::Style::points_and_line});
      it = series.end() - 1;
    }
    it->second.points.emplace_back(static_cast<double>(s.rubu ? s.rus : s.rus + s.bus), 1e6 / rate);
  }
  r.summary["points"] = std::move(points);

  out.plot.title = fmt::format("Event builder over {}: cost per event", o.cluster.transport);
  out.plot.x_label = "nodes (RUs + BUs; RUBU: nodes)";
  out.plot.y_label = "time per built event (us)";
  for (auto& [key, s] : series) out.plot.series.push_back(std::move(s));
  return out;
}

}  // namespace daqflow::bench
