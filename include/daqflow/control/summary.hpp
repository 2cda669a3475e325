#pragma once
// The summary of a run, written as JSON by `daqflow run --summary FILE`:
//
//   {"config", "run_number", "started_at", "duration_s", "status": "ok"|"failed", "failure":
//   null|"...",
//    "lost": ["context bu2 (pid 123) died: ..."],
//    "came_back": ["context bu1 (...) did not answer its control API for 9.1 s, then again"],
//    "contexts": [{"name", "pid", "exit_code"}],
//    "applications": {id: {"type", "context", "state", "reason", "metrics", "results"}},
//    "results": {...}}
//
// "results" folds every application's results with its type's AppType::fold_results, in
// configuration order. Pure functions; no I/O.

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "daqflow/control/transition_record.hpp"
#include "daqflow/core/result.hpp"
#include "daqflow/runtime/application.hpp"
#include "daqflow/runtime/config.hpp"

namespace daqflow::control {

struct ContextOutcome {
  std::string name;
  int pid = 0;                   // 0 when the process never started
  std::optional<int> exit_code;  // shell convention (128 + signal); none while unknown
};

struct AppOutcome {
  std::string id;
  std::string type;
  std::string context;
  std::string state;   // the last state seen; "Lost" when its context died
  std::string reason;  // why it Failed (or was Lost); empty otherwise
  nlohmann::json metrics = nlohmann::json::object();
  nlohmann::json results = nlohmann::json::object();
  nlohmann::json endpoint;  // its endpoint's counters when last seen (null: none)
};

struct RunSummary {
  std::string config;
  std::uint32_t run_number = 0;
  std::string started_at;   // ISO 8601, UTC
  double duration_s = 0.0;  // from all applications Enabled to the start of Halt
  // How long the run took to get there: the executives started (every control port answering,
  // the launchers' start-up included), every application configured, every rank enabled.
  double start_s = 0.0;
  double configure_s = 0.0;
  double enable_s = 0.0;
  std::optional<std::string> failure;
  // Contexts that died while the run went on without them (survivable applications only).
  std::vector<std::string> lost;
  // Contexts that went silent while the run went on without them, and answered again (a host
  // cut off and back): no longer lost.
  std::vector<std::string> came_back;
  // Contexts started again by their restart policy: "context bu2 restarted (1 of 5) after ...".
  std::vector<std::string> restarted;
  std::vector<ContextOutcome> contexts;
  std::vector<AppOutcome> applications;  // configuration order
  // Each application's part in each transition, in the order they were waited for.
  std::vector<TransitionRecord> transitions;
  nlohmann::json results = nlohmann::json::object();

  [[nodiscard]] bool ok() const { return !failure.has_value(); }
  [[nodiscard]] nlohmann::json to_json() const;
};

// {"at_ms", "transition", "application", "outcome", "duration_ms", "reason"}.
void to_json(nlohmann::json& out, const TransitionRecord& t);

// Folds the applications' results with their types' fold_results (types without one are
// skipped), in the order of `apps`; an application whose results are not an object is skipped.
// A folder that throws is an error naming the application.
[[nodiscard]] Result<nlohmann::json> fold_results(const runtime::AppRegistry& registry,
                                                  const std::vector<AppOutcome>& apps);

// "2024-05-01T12:34:56Z".
[[nodiscard]] std::string iso8601_utc(std::chrono::system_clock::time_point t);

// What a person reads at the end of a run: status, duration, failure, the results object
// pretty-printed, and a warning for each kind of data a builder built but did not write.
[[nodiscard]] std::string format_human_summary(const RunSummary& summary);

// "WARNING: 12 built events were not written: ..." for each of the run's results
// events_not_written, timeslices_not_written and farm_events_not_written that is not zero.
[[nodiscard]] std::string not_written_warnings(const nlohmann::json& results);

}  // namespace daqflow::control
