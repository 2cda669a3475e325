#pragma once
// Pre-flight checks: what `daqflow run` verifies on every host before it starts any executive,
// so that a run does not fail deep in one executive's Configure for something an operator fixes
// in a minute (docs/operations.md, Pre-flight checks):
//
//   ports     each context's control port, and the data port of each application on tcp, is free
//   /dev/shm  has room for the send pools of the applications on shm (AppType::host_needs) and
//             their endpoints' segments
//   disk      each output folder can be written and has room for what its outputs may write
//   hosts     each host answers through its launcher and runs this daqflow build
//
// A host's checks run on the host: in this process for the contexts of this machine, and through
// the host's launcher (`daqflow check --host-checks`) for the others, one thread per host.
//
//   auto problems = control::preflight(config, registry, settings);
//   for (const auto& p : problems) std::puts(p.str().c_str());

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "daqflow/control/launcher.hpp"
#include "daqflow/runtime/application.hpp"
#include "daqflow/runtime/config.hpp"

namespace daqflow::control {

struct PreflightProblem {
  std::string contexts;  // the contexts concerned ("ru1, ru2"); empty: the host itself
  std::string host;      // the contexts' host (their `host`)
  std::string what;
  std::string fix;  // what to do
  // "context ru2 on 127.0.0.1: control port 9302 is taken by pid 1234 (daqflow): stop ..."
  [[nodiscard]] std::string str() const;
};

// What a host's checks found, and the daqflow build that ran them.
struct HostCheck {
  std::string build_id;
  std::vector<PreflightProblem> problems;
};

// The checks of the contexts named, all on this machine (`host` names it in the problems).
[[nodiscard]] HostCheck check_this_host(const runtime::ClusterConfig& config,
                                        const runtime::AppRegistry& registry,
                                        const std::vector<std::string>& contexts,
                                        const std::string& host);

// Every host's checks, for the configuration at config_path (self: this daqflow program, for
// the hosts whose `daqflow` key does not name one); empty when all is well. An error when the
// checks cannot be made at all (the configuration's file or token cannot be read).
[[nodiscard]] Result<std::vector<PreflightProblem>> preflight(const runtime::ClusterConfig& config,
                                                              const runtime::AppRegistry& registry,
                                                              const std::string& config_path,
                                                              const std::string& self);

void to_json(nlohmann::json& out, const HostCheck& check);
[[nodiscard]] Result<HostCheck> host_check_from_json(const nlohmann::json& in);

}  // namespace daqflow::control
