#pragma once
// A run's entry in the run registry, as `daqflow run` makes and closes it, and what `daqflow
// runs` shares with it.
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "daqflow/control/run_registry.hpp"
#include "daqflow/control/summary.hpp"
#include "daqflow/runtime/config.hpp"

namespace daqflow::cli {

struct RegisteredRun {
  std::unique_ptr<control::RunRegistry> registry;
  std::uint32_t number = 0;
};

// The registry the configuration names (run.registry), else the default one.
[[nodiscard]] Result<std::unique_ptr<control::RunRegistry>> open_run_registry(
    const runtime::ClusterConfig& config);

// Records the run's start and sets config.run.number to its number: the configuration's, else the
// registry's next. A number run before is refused unless `reuse`. With `attach` (a run taken
// over), no new run: the configuration's number, else its configuration's last run that is
// running or whose controller died.
[[nodiscard]] Result<RegisteredRun> register_run(runtime::ClusterConfig& config,
                                                 const std::string& config_path, bool attach,
                                                 bool reuse);

// Records the end: each application's part in each transition, the files the applications
// wrote (on their contexts' hosts), "ended" or "failed", and the summary. A registry that fails
// here is reported on standard error; the run's files and summary are written already.
void close_registered_run(RegisteredRun& run, const runtime::ClusterConfig& config,
                          const control::RunSummary& summary);

// Runs this host's registry has as running whose controller process is gone (killed, or its
// host rebooted) become "controller_died", with a comment saying so.
[[nodiscard]] Result<void> mark_dead_controllers(control::RunRegistry& registry);

// The number of the newest run of the configuration at config_path (in `state`; "": any), if any.
[[nodiscard]] Result<std::optional<std::uint32_t>> last_run_of(control::RunRegistry& registry,
                                                               const std::string& config_path,
                                                               const std::string& state);

// A run's record as `daqflow runs ... --json` prints it: the summary fields, and with whole the
// configuration, summary, transitions, files and comments.
[[nodiscard]] nlohmann::json record_json(const control::RunRecord& r, bool whole);

// GET /api/v1/runs[/N] of an executive (runtime::ExecutiveOptions::runs): the registry the
// configuration names (else the default one) as this executive reaches it; the runs newest first
// ({registry, runs: [...]}, query: state, config, limit), or run N whole.
[[nodiscard]] Result<nlohmann::json> runs_view(const runtime::ClusterConfig& config,
                                               std::string_view rest,
                                               const std::map<std::string, std::string>& query);

[[nodiscard]] std::int64_t unix_now_ms();
[[nodiscard]] std::string user_name();

}  // namespace daqflow::cli
