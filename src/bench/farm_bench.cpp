// daqflow bench farm: the filter farm (docs/farm.md). Two parts, each in rounds that interleave
// their runs, compared by medians:
//   1. no processing time (workers answer at once): push (no tokens), tokens and round_robin;
//      the ratio of each to push, the per-worker share and Jain's fairness index, the latency
//      percentiles of the tokens runs;
//   2. a processing time for every worker and one worker slow_factor times slower: tokens and
//      round_robin, each with uniform and with heterogeneous workers; how much rate each keeps.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <vector>

#include "cluster_run.hpp"
#include "daqflow/bench/runners.hpp"
#include "daqflow/runtime/params.hpp"

namespace daqflow::bench {

namespace {

// Jain's fairness index of the workers' shares: 1 when all are equal, 1/n when one takes all.
double jain(const std::vector<double>& x) {
  double sum = 0;
  double squares = 0;
  for (const double v : x) {
    sum += v;
    squares += v * v;
  }
  return squares > 0 ? sum * sum / (static_cast<double>(x.size()) * squares) : 0.0;
}

struct FarmRun {
  double events_per_s = 0;
  double mb_s = 0;
  double p50_us = 0, p90_us = 0, p99_us = 0;
  double jain = 0;
  double min_share = 0, max_share = 0;  // of the mean share
};

Result<FarmRun> run_one(const FarmOptions& o, const FarmShape& s, const std::string& name,
                        const std::string& what, BenchEnv& env) {
  ClusterSettings cluster = o.cluster;
  cluster.output_dir = point_dir(env, name);
  cluster.max_message_size =
      std::max<std::uint64_t>(cluster.max_message_size, std::uint64_t{s.event_size} + 4096);
  auto summary = run_point(farm_yaml(cluster, s), name, o.duration_s, env);
  if (!summary) return summary.error().context(what);
  const nlohmann::json& sfc = app_results(*summary, "sfc0");
  runtime::ParamReader r(sfc, "sfc0", "result");
  FarmRun out;
  out.events_per_s = r.get<double>("events_per_s");
  out.mb_s = r.get<double>("mb_per_s");
  const auto latency = r.get<nlohmann::json>("latency_us");
  const auto workers = r.get<nlohmann::json>("workers");
  if (auto read = r.status(); !read) return read.error().context(what);
  if (out.events_per_s <= 0)
    return Error(what + ": no event decided (see " + cluster.output_dir + ")");
  out.p50_us = latency.value("p50", 0.0);
  out.p90_us = latency.value("p90", 0.0);
  out.p99_us = latency.value("p99", 0.0);
  std::vector<double> shares;
  for (const auto& [id, n] : workers.items()) shares.push_back(n.get<double>());
  out.jain = jain(shares);
  double mean = 0;
  for (const double v : shares) mean += v;
  mean /= static_cast<double>(std::max<std::size_t>(1, shares.size()));
  if (mean > 0 && !shares.empty()) {
    out.min_share = *std::min_element(shares.begin(), shares.end()) / mean;
    out.max_share = *std::max_element(shares.begin(), shares.end()) / mean;
  }
  return out;
}

}  // namespace

std::string command_line(const FarmOptions& o) {
  return fmt::format(
      "daqflow bench farm --transport {} --workers {} --workers-per-process {} --event-size {} "
      "--window {} --accept-fraction {:g} --output-bytes {} --time-us {:g} --slow-factor {:g} "
      "--duration {:g} --rounds {} --idle {} --port-base {}{}",
      o.cluster.transport, o.shape.workers, o.shape.workers_per_context, o.shape.event_size,
      o.shape.window, o.shape.accept_fraction, o.shape.output_bytes, o.time_us, o.slow_factor,
      o.duration_s, o.rounds, o.cluster.idle, o.cluster.port_base, cluster_options(o.cluster));
}

namespace {

// The result set of the farm benchmark before its rows: its name, parameters and columns.
ResultSet farm_result_set(const FarmOptions& o) {
  ResultSet r = cluster_result_set("farm", fmt::format("farm-{}", o.cluster.transport), o.cluster,
                                   command_line(o));
  r.params.update(nlohmann::json{{"workers", o.shape.workers},
                                 {"workers_per_process", o.shape.workers_per_context},
                                 {"event_size", o.shape.event_size},
                                 {"window", o.shape.window},
                                 {"accept_fraction", o.shape.accept_fraction},
                                 {"output_bytes", o.shape.output_bytes},
                                 {"time_us", o.time_us},
                                 {"slow_factor", o.slow_factor},
                                 {"duration_s", o.duration_s},
                                 {"rounds", o.rounds},
                                 {"output", "discard"}});
  r.columns = {"part",   "round",  "policy", "time_us", "slow_factor", "events_per_s", "mb_s",
               "p50_us", "p90_us", "p99_us", "jain",    "min_share",   "max_share"};
  return r;
}

// The medians of the farm's cases, events per second.
struct FarmMedians {
  double push, tokens, round_robin, tokens_uniform, tokens_slow, round_robin_uniform,
      round_robin_slow;
};

double ratio(double a, double b) {
  return b > 0 ? a / b : 0.0;
}

nlohmann::json farm_summary(const FarmMedians& m, const std::vector<double>& jains,
                            const std::vector<double>& p50, const std::vector<double>& p99) {
  return {{"push_events_per_s", m.push},
          {"tokens_events_per_s", m.tokens},
          {"round_robin_events_per_s", m.round_robin},
          {"tokens_to_push", ratio(m.tokens, m.push)},
          {"round_robin_to_push", ratio(m.round_robin, m.push)},
          {"tokens_jain", median(jains)},
          {"tokens_p50_us", median(p50)},
          {"tokens_p99_us", median(p99)},
          {"tokens_uniform_events_per_s", m.tokens_uniform},
          {"tokens_slow_events_per_s", m.tokens_slow},
          {"tokens_slow_kept", ratio(m.tokens_slow, m.tokens_uniform)},
          {"round_robin_uniform_events_per_s", m.round_robin_uniform},
          {"round_robin_slow_events_per_s", m.round_robin_slow},
          {"round_robin_slow_kept", ratio(m.round_robin_slow, m.round_robin_uniform)}};
}

std::string farm_medians_line(const nlohmann::json& summary, double slow_factor) {
  return fmt::format(
      "medians: push {:.0f}, tokens {:.0f} ({:.3f} of push), round_robin {:.0f} ({:.3f}) "
      "events/s; with one worker {:g}x slower tokens keeps {:.3f} of its rate, round_robin "
      "{:.3f}",
      summary["push_events_per_s"].get<double>(), summary["tokens_events_per_s"].get<double>(),
      summary["tokens_to_push"].get<double>(), summary["round_robin_events_per_s"].get<double>(),
      summary["round_robin_to_push"].get<double>(), slow_factor,
      summary["tokens_slow_kept"].get<double>(), summary["round_robin_slow_kept"].get<double>());
}

}  // namespace

Result<BenchOutput> run_farm(const FarmOptions& o, BenchEnv& env) {
  if (auto ok = check_transport(o.cluster.transport); !ok) return ok.error();
  BenchOutput out;
  ResultSet& r = out.result;
  r = farm_result_set(o);

  struct Case {
    std::string part, policy;
    double time_us, slow;
  };
  std::vector<Case> cases = {{"policies", "push", 0, 1},
                             {"policies", "tokens", 0, 1},
                             {"policies", "round_robin", 0, 1},
                             {"slow worker", "tokens", o.time_us, 1},
                             {"slow worker", "tokens", o.time_us, o.slow_factor},
                             {"slow worker", "round_robin", o.time_us, 1},
                             {"slow worker", "round_robin", o.time_us, o.slow_factor}};
  std::map<std::string, std::vector<double>> rates;  // by case key
  std::map<std::string, Series> series;
  const auto key_of = [](const Case& c) {
    return fmt::format("{} {}{}", c.policy,
                       c.time_us > 0 ? fmt::format("{:g} us", c.time_us) : "no time",
                       c.slow > 1 ? fmt::format(", one {:g}x slower", c.slow) : "");
  };
  std::vector<double> jains;
  std::vector<double> p50, p99;
  const int total = o.rounds * static_cast<int>(cases.size());
  int done = 0;
  for (int round = 1; round <= o.rounds; ++round) {
    for (const Case& c : cases) {
      const std::string key = key_of(c);
      const std::string what = fmt::format("farm {} {} round {}", o.cluster.transport, key, round);
      if (env.progress != nullptr) env.progress->begin(++done, total, what);
      FarmShape s = o.shape;
      s.policy = c.policy;
      s.time_us = c.time_us;
      s.slow_factor = c.slow;
      ClusterSettings cluster = o.cluster;
      const std::string name = fmt::format("{}-{}-{}", r.stem, round, done);
      auto run = run_one(o, s, name, what, env);
      if (!run) return run.error();
      add_row(
          r, {c.part, round, c.policy, c.time_us, c.slow, run->events_per_s, run->mb_s, run->p50_us,
              run->p90_us, run->p99_us, run->jain, run->min_share, run->max_share});
      rates[key].push_back(run->events_per_s);
      if (c.policy == "tokens" && c.time_us == 0) {
        jains.push_back(run->jain);
        p50.push_back(run->p50_us);
        p99.push_back(run->p99_us);
      }
      auto [it, fresh] = series.try_emplace(key, Series{key, {}, Series::Style::points_and_line});
      it->second.points.emplace_back(round, run->events_per_s);
      if (env.progress != nullptr) {
        env.progress->line(
            fmt::format("{}: {:.0f} events/s, {:.1f} MB/s, Jain {:.3f}, p50 {:.0f} us", what,
                        run->events_per_s, run->mb_s, run->jain, run->p50_us));
      }
    }
  }
  const auto med = [&](const Case& c) { return median(rates[key_of(c)]); };
  const double push = med(cases[0]);
  const double tokens = med(cases[1]);
  const double rr = med(cases[2]);
  const double tokens_uniform = med(cases[3]);
  const double tokens_slow = med(cases[4]);
  const double rr_uniform = med(cases[5]);
  const double rr_slow = med(cases[6]);
  r.summary = farm_summary({push, tokens, rr, tokens_uniform, tokens_slow, rr_uniform, rr_slow},
                           jains, p50, p99);
  if (env.progress != nullptr) env.progress->line(farm_medians_line(r.summary, o.slow_factor));
  out.plot.title = fmt::format("Filter farm over {}: {} workers, {} B events", o.cluster.transport,
                               o.shape.workers, o.shape.event_size);
  out.plot.x_label = "round";
  out.plot.y_label = "events decided per second";
  for (auto& [key, s] : series) out.plot.series.push_back(std::move(s));
  return out;
}

}  // namespace daqflow::bench
