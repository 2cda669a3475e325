#pragma once
// The order of a run (docs/architecture.md, "Run control"): which applications are enabled together
// and in which order, which state a command leads to, and how each process of the run is started.
// Pure functions of the configuration; no I/O.

#include <string>
#include <string_view>
#include <vector>

#include "daqflow/core/result.hpp"
#include "daqflow/runtime/application.hpp"
#include "daqflow/runtime/config.hpp"

namespace daqflow::control {

struct PlannedApp {
  std::string id;
  std::string type;
  std::string context;
  int rank = 0;  // AppType::enable_rank
};

// The applications in groups of equal enable rank, ranks ascending (consumers before producers);
// within a group, configuration order. Enable walks the groups forwards.
[[nodiscard]] std::vector<std::vector<PlannedApp>> enable_order(
    const runtime::ClusterConfig& config, const runtime::AppRegistry& registry);

// The same groups, ranks descending: Halt stops producers first so that consumers drain.
[[nodiscard]] std::vector<std::vector<PlannedApp>> halt_order(const runtime::ClusterConfig& config,
                                                              const runtime::AppRegistry& registry);

// The command line of the executive hosting a group of contexts:
// SELF exec CONFIG --context A [--context B ...] [EXTRA...] (extra: options for every
// executive, e.g. --record DIR).
[[nodiscard]] std::vector<std::string> exec_command(const std::string& self,
                                                    const std::string& config_path,
                                                    const std::vector<std::string>& contexts,
                                                    const std::vector<std::string>& extra = {});

// The processes daqflow run starts, from the process groups (ClusterConfig::process_groups): the
// groups hosting mpi contexts become one group, first, started by a single mpirun (its mpi
// contexts in rank order). An inproc link may not join an mpi context with any other context
// (each rank is one process of its own): the error names both contexts.
[[nodiscard]] Result<std::vector<std::vector<std::string>>> launch_groups(
    const runtime::ClusterConfig& config, std::vector<std::vector<std::string>> groups);

// mpirun and its options, before the ranks: $DAQFLOW_MPIRUN, else mpirun from PATH (through
// /usr/bin/env); then $DAQFLOW_MPIRUN_ARGS (split at spaces), else settings for one host over
// loopback and shared memory (--oversubscribe, --bind-to none, btl self,vader,tcp on lo, pml
// ob1, --tag-output), plus --allow-run-as-root for root; across hosts (one_host false), tcp on
// whatever interfaces reach them. The MPI reference of `daqflow bench` starts with the same.
// shm_dir (one host, daqflow's own settings): Open MPI's shared-memory segments go there
// (btl_vader_backing_directory), a folder the caller removes once the ranks are gone, so that a
// rank killed leaves none behind in /dev/shm.
[[nodiscard]] std::vector<std::string> mpirun_command(bool one_host = true,
                                                      const std::string& shm_dir = {});

// The command line that starts a launch group: exec_command, or for the group of mpi contexts one
// mpirun with a rank per mpi context (MPMD, rank order = mpi_contexts):
//   MPIRUN ARGS -np 1 SELF exec CONFIG --context A : -np 1 SELF exec CONFIG --context B ...
// MPIRUN ARGS are mpirun_command(). A rank whose host is reached over ssh (`hosts`) gets
// `--host ADDRESS` (and the host's daqflow path), and mpirun starts it with its own ssh
// (plm_rsh_agent, from the host's ssh settings); the configuration file must then be at the same
// path there, as MPI expects of its programs.
[[nodiscard]] std::vector<std::string> launch_command(const std::string& self,
                                                      const std::string& config_path,
                                                      const std::vector<std::string>& group,
                                                      const runtime::ClusterConfig& config,
                                                      const std::vector<std::string>& extra = {},
                                                      const std::string& shm_dir = {});

}  // namespace daqflow::control
