#pragma once
// The configuration's hooks (runtime::HooksSettings): commands run by the controller before and
// after each transition, such as opening a run in an experiment's run-information service or
// writing to its logbook.
//
// Each command runs through /bin/sh in the configuration file's folder, with the run in its
// environment: DAQFLOW_RUN_NUMBER, DAQFLOW_TRANSITION (configure, enable, halt), DAQFLOW_HOOK
// (before, after), DAQFLOW_CONFIG (the configuration file), DAQFLOW_RUN_OUTPUT (run.output) and
// DAQFLOW_RUN_STATUS (ok, or failed when the run has failed so far). A command that exits with
// another code than 0, or runs past hooks.timeout_s, has failed; the last lines of what it
// printed are the reason.

#include <string>
#include <string_view>
#include <vector>

#include "daqflow/control/transition_record.hpp"
#include "daqflow/runtime/config.hpp"

namespace daqflow::control {

struct HookContext {
  std::string config_path;  // absolute
  bool failed_so_far = false;
};

// The commands of `transition`'s `when` (before, after) hooks.
[[nodiscard]] const std::vector<std::string>& hook_commands(const runtime::HooksSettings& hooks,
                                                            std::string_view transition,
                                                            std::string_view when);

// Runs them in order, one record each ({transition, "before: COMMAND", ok or failed, duration,
// reason}); the before hooks stop at the first that fails, the after hooks all run.
[[nodiscard]] std::vector<TransitionRecord> run_hooks(const runtime::ClusterConfig& config,
                                                      std::string_view transition,
                                                      std::string_view when,
                                                      const HookContext& context);

}  // namespace daqflow::control
