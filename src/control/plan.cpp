#include "daqflow/control/plan.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <map>
#include <sstream>
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

std::vector<std::string> exec_command(const std::string& self, const std::string& config_path,
                                      const std::vector<std::string>& contexts,
                                      const std::vector<std::string>& extra) {
  std::vector<std::string> argv{self, "exec", config_path};
  for (const auto& name : contexts) {
    argv.emplace_back("--context");
    argv.push_back(name);
  }
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

Result<std::vector<std::vector<std::string>>> launch_groups(
    const runtime::ClusterConfig& config, std::vector<std::vector<std::string>> groups) {
  const auto ranks = config.mpi_contexts();
  if (ranks.empty()) return groups;
  auto is_rank = [&](const std::string& name) {
    return std::find(ranks.begin(), ranks.end(), name) != ranks.end();
  };
  std::vector<std::string> mpi_group = ranks;
  std::vector<std::vector<std::string>> out;
  for (auto& group : groups) {
    std::vector<std::string> in_group;
    for (const auto& name : group) {
      if (is_rank(name)) in_group.push_back(name);
    }
    if (in_group.empty()) {
      out.push_back(std::move(group));
      continue;
    }
    if (group.size() > 1) {
      const std::string& other = group[0] == in_group[0] ? group[1] : group[0];
      return Error("contexts " + in_group[0] + " and " + other +
                   " are joined into one process by inproc links, but " + in_group[0] +
                   " hosts mpi applications and MPI needs a process (rank) per context: link "
                   "them with mpi (or tcp, shm) instead");
    }
  }
  out.insert(out.begin(), std::move(mpi_group));
  return out;
}

std::vector<std::string> mpirun_command(bool one_host, const std::string& shm_dir) {
  std::vector<std::string> argv;
  if (const char* mpirun = std::getenv("DAQFLOW_MPIRUN"); mpirun != nullptr && *mpirun != 0) {
    argv.emplace_back(mpirun);
  } else {
    argv = {"/usr/bin/env", "mpirun"};
  }
  if (const char* extra = std::getenv("DAQFLOW_MPIRUN_ARGS"); extra != nullptr) {
    std::istringstream words(extra);
    for (std::string w; words >> w;) argv.push_back(w);
  } else {
    if (::geteuid() == 0) argv.emplace_back("--allow-run-as-root");
    for (const char* a : {"--oversubscribe", "--bind-to", "none", "--tag-output", "--mca", "pml",
                          "ob1", "--mca", "btl", "self,vader,tcp"}) {
      argv.emplace_back(a);
    }
    // Across hosts Open MPI picks the interfaces that reach them.
    if (one_host) argv.insert(argv.end(), {"--mca", "btl_tcp_if_include", "lo"});
    if (one_host && !shm_dir.empty()) {
      argv.insert(argv.end(), {"--mca", "btl_vader_backing_directory", shm_dir});
    }
  }
  return argv;
}

std::vector<std::string> launch_command(const std::string& self, const std::string& config_path,
                                        const std::vector<std::string>& group,
                                        const runtime::ClusterConfig& config,
                                        const std::vector<std::string>& extra,
                                        const std::string& shm_dir) {
  const auto ranks = config.mpi_contexts();
  if (group.empty() || std::find(ranks.begin(), ranks.end(), group.front()) == ranks.end()) {
    return exec_command(self, config_path, group, extra);
  }
  // Ranks on hosts reached over ssh are placed there (--host) and started by mpirun's own ssh,
  // with the host's ssh settings.
  const runtime::HostConfig* over_ssh = nullptr;
  for (const auto& name : group) {
    const runtime::HostConfig* host = config.host_of(*config.find_context(name));
    if (host != nullptr && host->launcher == runtime::LauncherKind::ssh) over_ssh = host;
  }
  std::vector<std::string> argv = mpirun_command(over_ssh == nullptr, shm_dir);
  if (over_ssh != nullptr) {
    std::string agent = "ssh -o BatchMode=yes";
    if (over_ssh->ssh.port != 0) agent += " -p " + std::to_string(over_ssh->ssh.port);
    if (!over_ssh->ssh.user.empty()) agent += " -l " + over_ssh->ssh.user;
    for (const auto& o : over_ssh->ssh.options) agent += " " + o;
    argv.insert(argv.end(), {"--mca", "plm_rsh_agent", agent});
    // The token, when it comes from the environment, goes with the ranks (not on a command line).
    if (const char* token = std::getenv("DAQFLOW_TOKEN"); token != nullptr && *token != 0) {
      argv.insert(argv.end(), {"-x", "DAQFLOW_TOKEN"});
    }
  }
  for (const auto& name : group) {
    if (std::find(ranks.begin(), ranks.end(), name) == ranks.end()) continue;
    if (name != group.front()) argv.emplace_back(":");  // MPMD: one program per rank
    argv.insert(argv.end(), {"-np", "1"});
    const runtime::ContextConfig& ctx = *config.find_context(name);
    const runtime::HostConfig* host = config.host_of(ctx);
    const bool remote = host != nullptr && host->launcher == runtime::LauncherKind::ssh;
    if (remote) argv.insert(argv.end(), {"--host", ctx.host});
    const auto one = exec_command(remote && !host->daqflow.empty() ? host->daqflow : self,
                                  config_path, {name}, extra);
    argv.insert(argv.end(), one.begin(), one.end());
  }
  return argv;
}

}  // namespace daqflow::control
