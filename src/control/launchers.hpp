#pragma once
// The launcher backends (launcher.hpp), each in a file of its own.

#include <memory>
#include <string>
#include <vector>

#include "daqflow/control/launcher.hpp"

namespace daqflow::control {

// A child of the controller running argv, its output appended to local_log.
[[nodiscard]] Result<std::unique_ptr<Launched>> start_command(const std::vector<std::string>& argv,
                                                              const std::string& local_log);

[[nodiscard]] Result<std::unique_ptr<Launcher>> make_ssh_launcher(const runtime::HostConfig& host,
                                                                  const std::string& address,
                                                                  const LaunchSettings& settings);

[[nodiscard]] Result<std::unique_ptr<Launcher>> make_slurm_launcher(const runtime::HostConfig& host,
                                                                    const std::string& address,
                                                                    const LaunchSettings& settings);

[[nodiscard]] Result<std::unique_ptr<Launcher>> make_supervisor_launcher(
    const runtime::HostConfig& host, const std::string& address, const LaunchSettings& settings);

}  // namespace daqflow::control
