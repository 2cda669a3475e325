#include "cluster_run.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include "daqflow/apps/builtin.hpp"
#include "daqflow/control/run.hpp"
#include "daqflow/runtime/application.hpp"
#include "daqflow/runtime/config.hpp"
#include "daqflow/runtime/params.hpp"
#include "daqflow/transport/transport.hpp"
#include "ports.hpp"

namespace daqflow::bench {

namespace {

const runtime::AppRegistry& registry() {
  return apps::builtin_registry();
}

class SilentReporter final : public control::RunReporter {
 public:
  void note(const std::string& /*text*/) override {}
  void status(const control::StatusLine& /*line*/) override {}
};

}  // namespace

Result<void> check_transport(const std::string& name) {
  std::string built;
  for (const auto t : transport::transport_names()) {
    if (t == name) return {};
    built += (built.empty() ? "" : ", ") + std::string(t);
  }
  return Error(ErrorCode::not_found,
               "transport '" + name + "' is not built into this daqflow (built: " + built +
                   "); ucx, ofi and mpi need their libraries at build time (scripts/bootstrap)");
}

std::string point_dir(const BenchEnv& env, const std::string& name) {
  return (std::filesystem::path(env.out_dir) / "runs" / name).string();
}

Result<control::RunSummary> run_point(const std::string& yaml, const std::string& name,
                                      double duration_s, BenchEnv& env) {
  const std::filesystem::path dir = point_dir(env, name);
  std::error_code ec;
  std::filesystem::remove_all(dir / "logs", ec);
  std::filesystem::create_directories(dir, ec);
  if (ec)
    return Error(ErrorCode::unavailable, "cannot create " + dir.string() + ": " + ec.message());
  const auto config_path = std::filesystem::absolute(dir / "config.yaml");
  {
    std::ofstream out(config_path, std::ios::trunc);
    out << yaml;
    if (!out.flush()) return Error(ErrorCode::unavailable, "cannot write " + config_path.string());
  }
  auto config = runtime::load_config(config_path.string(), registry());
  if (!config) return config.error().context("generated configuration");

  // A port already listening is most likely another bench on the same base, whose executives
  // would answer this run's control requests.
  for (const auto& ctx : config->contexts) {
    std::vector<int> ports{ctx.control_port};
    for (std::size_t i = 0; i < ctx.applications.size(); ++i) {
      ports.push_back(ctx.data_port + static_cast<int>(i));
    }
    for (const int port : ports) {
      if (!tcp_port_listening(port)) continue;
      return Error(ErrorCode::unavailable,
                   "port " + std::to_string(port) + " of context '" + ctx.name +
                       "' is already in use (another daqflow bench or run?); choose other ports "
                       "with --port-base");
    }
  }

  control::RunOptions options;
  options.config_path = config_path.string();
  options.self = env.self;
  options.log_dir = (dir / "logs").string();
  options.duration_s = duration_s;
  options.status_interval_s = 1.0;
  static const std::atomic<int> no_stop{0};
  SilentReporter silent;
  control::RunReporter& reporter =
      env.progress != nullptr ? static_cast<control::RunReporter&>(*env.progress) : silent;
  const auto summary = control::run_cluster(*config, registry(), options, reporter,
                                            env.stop != nullptr ? *env.stop : no_stop);
  {
    std::ofstream out(dir / "summary.json", std::ios::trunc);
    out << summary.to_json().dump(2) << "\n";
  }
  if (!summary.ok()) {
    return Error(*summary.failure + " (configuration, summary and logs in " + dir.string() + ")");
  }
  if (env.stop != nullptr && env.stop->load() > 0) return Error("stopped");
  return summary;
}

const nlohmann::json& app_results(const control::RunSummary& summary, const std::string& id) {
  static const nlohmann::json empty = nlohmann::json::object();
  for (const auto& a : summary.applications) {
    if (a.id == id) return a.results.is_object() ? a.results : empty;
  }
  return empty;
}

// Each receiver's figures from a point's summary; an error when a sink saw a sequence or
// pattern error, or received nothing (a transport that never got going).
Result<std::vector<ReceiverRate>> receiver_rates(const control::RunSummary& summary,
                                                 int receivers) {
  std::vector<ReceiverRate> rates;
  for (int k = 0; k < receivers; ++k) {
    const auto id = fmt::format("sink{}", k);
    runtime::ParamReader res(app_results(summary, id), "sink " + id, "result");
    const auto errors_sequence = res.get<std::uint64_t>("errors_sequence");
    const auto errors_pattern = res.get<std::uint64_t>("errors_pattern");
    const auto messages = res.get<std::uint64_t>("messages");
    const bool sampled = res.get<std::string>("window") == "sampled";
    ReceiverRate rate{res.get<double>("throughput_mb_s"), res.get<double>("stddev_mb_s"),
                      res.get<double>("messages_per_s"),
                      sampled ? res.get<std::uint64_t>("samples") : 0};
    if (auto read = res.status(); !read) return read.error();
    if (errors_sequence != 0 || errors_pattern != 0) {
      return Error(fmt::format("sink {} saw {} sequence and {} pattern errors", id, errors_sequence,
                               errors_pattern));
    }
    if (messages == 0) return Error("no message arrived at " + id);
    rates.push_back(rate);
  }
  return rates;
}

}  // namespace daqflow::bench
