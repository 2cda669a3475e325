#include "daqflow/control/plan.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <utility>

namespace daqflow::control {

std::vector<std::vector<PlannedApp>> enable_order(const runtime::ClusterConfig& config,
                                                  const runtime::AppRegistry& registry) {
  // std::map keeps ranks sorted; push_back keeps configuration order within a rank.
  std::map<int, std::vector<PlannedApp>> by_rank;
  for (const auto& app : config.applications) {
    const runtime::AppType* type = registry.find(app.type);
    const int rank = type != nullptr ? type->enable_rank : 0;
    by_rank[rank].push_back(PlannedApp{app.id, app.type, app.context, rank});
  }
  std::vector<std::vector<PlannedApp>> groups;
  groups.reserve(by_rank.size());
  for (auto& [rank, apps] : by_rank) groups.push_back(std::move(apps));
  return groups;
}

std::vector<std::vector<PlannedApp>> halt_order(const runtime::ClusterConfig& config,
                                                const runtime::AppRegistry& registry) {
  auto groups = enable_order(config, registry);
  std::reverse(groups.begin(), groups.end());
  return groups;
}

Result<std::string> target_state(std::string_view command) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 6> kTargets{{
      {"Configure", "Ready"},
      {"Enable", "Enabled"},
      {"Suspend", "Suspended"},
      {"Resume", "Enabled"},
      {"Halt", "Halted"},
      {"Reset", "Halted"},
  }};
  for (const auto& [cmd, state] : kTargets) {
    if (cmd == command) return std::string(state);
  }
  return Error("unknown command '" + std::string(command) +
               "' (expected Configure, Enable, Suspend, Resume, Halt or Reset)");
}

bool is_transitional(std::string_view state) {
  return state == "Configuring" || state == "Enabling" || state == "Suspending" ||
         state == "Resuming" || state == "Halting";
}

bool can_halt(std::string_view state) {
  return state == "Ready" || state == "Enabled" || state == "Suspended";
}

std::vector<std::string> exec_command(const std::string& self, const std::string& config_path,
                                      const std::vector<std::string>& contexts) {
  std::vector<std::string> argv{self, "exec", config_path};
  for (const auto& name : contexts) {
    argv.emplace_back("--context");
    argv.push_back(name);
  }
  return argv;
}

}  // namespace daqflow::control
