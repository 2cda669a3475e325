#include "daqflow/control/summary.hpp"

#include <fmt/format.h>

#include <array>
#include <ctime>
#include <exception>

namespace daqflow::control {

nlohmann::json RunSummary::to_json() const {
  nlohmann::json out;
  out["config"] = config;
  out["run_number"] = run_number;
  out["started_at"] = started_at;
  out["duration_s"] = duration_s;
  out["start_s"] = start_s;
  out["configure_s"] = configure_s;
  out["enable_s"] = enable_s;
  out["status"] = ok() ? "ok" : "failed";
  out["failure"] = failure ? nlohmann::json(*failure) : nlohmann::json(nullptr);
  out["lost"] = lost;
  out["came_back"] = came_back;
  out["restarted"] = restarted;
  out["contexts"] = nlohmann::json::array();
  for (const auto& c : contexts) {
    out["contexts"].push_back(
        {{"name", c.name},
         {"pid", c.pid},
         {"exit_code", c.exit_code ? nlohmann::json(*c.exit_code) : nlohmann::json(nullptr)}});
  }
  out["applications"] = nlohmann::json::object();
  for (const auto& a : applications) {
    out["applications"][a.id] = {{"type", a.type},        {"context", a.context},
                                 {"state", a.state},      {"reason", a.reason},
                                 {"metrics", a.metrics},  {"results", a.results},
                                 {"endpoint", a.endpoint}};
  }
  out["results"] = results;
  out["transitions"] = transitions;
  return out;
}

void to_json(nlohmann::json& out, const TransitionRecord& t) {
  out = {{"at_ms", t.at_ms},     {"transition", t.transition},   {"application", t.application},
         {"outcome", t.outcome}, {"duration_ms", t.duration_ms}, {"reason", t.reason}};
}

Result<nlohmann::json> fold_results(const runtime::AppRegistry& registry,
                                    const std::vector<AppOutcome>& apps) {
  nlohmann::json run_results = nlohmann::json::object();
  for (const auto& app : apps) {
    const runtime::AppType* type = registry.find(app.type);
    if (type == nullptr || type->fold_results == nullptr || !app.results.is_object()) continue;
    // The folders belong to the application types; a malformed result (a field of the wrong
    // type) makes nlohmann throw, which must not lose the rest of the summary.
    try {
      type->fold_results(run_results, app.id, app.results);
    } catch (const std::exception& e) {
      return Error(ErrorCode::internal, "folding the results of application " + app.id + " (type " +
                                            app.type + "): " + e.what());
    }
  }
  return run_results;
}

std::string iso8601_utc(std::chrono::system_clock::time_point t) {
  const std::time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  const std::size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return std::string(buf, n);
}

std::string not_written_warnings(const nlohmann::json& results) {
  struct Kind {
    const char* key;
    const char* what;
    const char* why;
  };
  static constexpr const char* kDiskCap = "an output reached its disk cap (max_total_mb)";
  static constexpr std::array<Kind, 4> kinds{{
      {"events_not_written", "built events", kDiskCap},
      {"timeslices_not_written", "timeslices", kDiskCap},
      {"farm_events_not_written", "accepted events of the farm", kDiskCap},
      {"events_dropped", "incomplete events",
       "they lack some RU's data, and an FRD output gives the HLT complete events only "
       "(incomplete: drop; counted lost in the EoLS files)"},
  }};
  std::string out;
  if (!results.is_object()) return out;
  for (const Kind& kind : kinds) {
    const auto it = results.find(kind.key);
    if (it == results.end() || !it->is_number_integer() || it->get<std::int64_t>() <= 0) continue;
    out += fmt::format("WARNING: {} {} were not written: {}; {} per application in the summary\n",
                       it->get<std::int64_t>(), kind.what, kind.why, kind.key);
  }
  return out;
}

std::string format_human_summary(const RunSummary& summary) {
  std::string out;
  if (summary.ok()) {
    out += fmt::format("run ok: {} applications in {} contexts, {:.1f} s enabled\n",
                       summary.applications.size(), summary.contexts.size(), summary.duration_s);
  } else {
    out += fmt::format("run FAILED after {:.1f} s enabled: {}\n", summary.duration_s,
                       *summary.failure);
  }
  for (const auto& lost : summary.lost) out += "lost, the run went on: " + lost + "\n";
  for (const auto& back : summary.came_back) out += "came back: " + back + "\n";
  for (const auto& r : summary.restarted) out += r + "\n";
  if (!summary.results.empty()) {
    out += "results:\n" + summary.results.dump(2) + "\n";
  }
  out += not_written_warnings(summary.results);
  return out;
}

}  // namespace daqflow::control
