#include "daqflow/control/cluster.hpp"

#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include "daqflow/control/plan.hpp"
#include "daqflow/runtime/access.hpp"

namespace daqflow::control {

namespace {

constexpr int kLogTailLines = 20;
constexpr auto kPollPeriod = std::chrono::milliseconds(50);

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

Result<LocalCluster> LocalCluster::launch(const runtime::ClusterConfig& config,
                                          const std::vector<std::vector<std::string>>& groups,
                                          const LaunchOptions& options) {
  // The token the control ports ask for, if any (docs/control-api.md, Access).
  auto token = runtime::access_token(config);
  if (!token) return token.error();
  LocalCluster cluster;
  for (const auto& group : groups) {
    if (group.empty()) continue;
    const auto log_path =
        (std::filesystem::path(options.log_dir) / (group.front() + ".log")).string();
    auto child = ChildProcess::spawn(
        launch_command(options.self, options.config_path, group, config,
                       options.record_dir.empty()
                           ? std::vector<std::string>{}
                           : std::vector<std::string>{"--record", options.record_dir}),
        log_path);
    if (!child) return child.error().context("starting context " + group.front());
    cluster.processes_.push_back(Process{group, std::move(*child), false});
  }
  for (const auto& ctx : config.contexts) {
    for (std::size_t p = 0; p < cluster.processes_.size(); ++p) {
      const auto& names = cluster.processes_[p].contexts;
      if (std::find(names.begin(), names.end(), ctx.name) == names.end()) continue;
      // A port opened on every interface is reached on the loopback; one bound to a single
      // address, there.
      const std::string& bind = ctx.control_bind;
      const bool wildcard = bind == "0.0.0.0" || bind == "::";
      ControlClient client(
          HostPort{wildcard || runtime::is_loopback(bind) ? "127.0.0.1" : bind, ctx.control_port});
      client.set_token(*token);
      cluster.contexts_.push_back(Context{ctx.name, p, std::move(client)});
    }
  }
  return cluster;
}

const LocalCluster::Context& LocalCluster::context(const std::string& name) const {
  for (const auto& c : contexts_) {
    if (c.name == name) return c;
  }
  throw std::out_of_range("no launched context named " + name);
}

const ControlClient& LocalCluster::client(const std::string& name) const {
  return context(name).client;
}

std::string LocalCluster::describe_end(const Process& p) const {
  const std::string who =
      p.contexts.size() == 1 ? "context " + p.contexts.front() : "contexts " + join(p.contexts);
  const auto& status = p.child.exit_status();
  return who + " (pid " + std::to_string(p.child.pid()) +
         ") died: " + (status ? status->str() : std::string("still running"));
}

std::vector<LocalCluster::Death> LocalCluster::reap_dead() {
  std::vector<Death> deaths;
  for (auto& p : processes_) {
    if (p.reported || !p.child.poll()) continue;
    p.reported = true;
    deaths.push_back(Death{p.contexts, describe_end(p)});
  }
  return deaths;
}

bool LocalCluster::alive(const std::string& name) const {
  return !processes_[context(name).process].child.exit_status().has_value();
}

std::string LocalCluster::death_of(const std::string& name) const {
  const auto& p = processes_[context(name).process];
  return p.child.exit_status() ? describe_end(p) : std::string();
}

Result<void> LocalCluster::wait_until_reachable(std::chrono::milliseconds timeout,
                                                const std::function<bool()>& abort) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::vector<bool> answered(contexts_.size(), false);
  for (;;) {
    for (auto& p : processes_) {
      if (p.reported || !p.child.poll()) continue;
      p.reported = true;
      std::string text = describe_end(p) + " before its control port answered";
      const auto tail = tail_of_file(p.child.log_path(), kLogTailLines);
      if (!tail.empty()) text += "; last lines of " + p.child.log_path() + ":\n" + tail;
      return Error(text);
    }
    std::vector<std::string> silent;
    for (std::size_t i = 0; i < contexts_.size(); ++i) {
      if (answered[i]) continue;
      // Short timeouts: an executive still starting refuses at once; one that hangs must not
      // hold up the others' polling.
      const ControlClient probe = contexts_[i].client.with_timeouts(
          std::chrono::milliseconds(200), std::chrono::milliseconds(1000));
      answered[i] = probe.get("/api/v1/context").ok();
      if (!answered[i])
        silent.push_back(contexts_[i].name + " at " + contexts_[i].client.address().str());
    }
    if (silent.empty()) return ok();
    if (abort && abort()) return Error("interrupted while waiting for the control ports");
    if (std::chrono::steady_clock::now() >= deadline) {
      return Error("no answer from the control port of " + join(silent) + " within " +
                   std::to_string(timeout.count() / 1000) +
                   " s (see the logs in the log directory)");
    }
    std::this_thread::sleep_for(kPollPeriod);
  }
}

Result<void> LocalCluster::shutdown(std::chrono::milliseconds grace) {
  std::vector<bool> was_running(processes_.size(), false);
  for (std::size_t i = 0; i < processes_.size(); ++i) {
    auto& p = processes_[i];
    if (p.child.poll()) continue;
    was_running[i] = true;
    const ControlClient c =
        context(p.contexts.front())
            .client.with_timeouts(std::chrono::milliseconds(500), std::chrono::milliseconds(2000));
    if (!c.post("/api/v1/shutdown").ok()) p.child.signal(SIGTERM);
  }
  const auto deadline = std::chrono::steady_clock::now() + grace;
  std::vector<std::string> problems;
  for (std::size_t i = 0; i < processes_.size(); ++i) {
    if (!was_running[i]) continue;
    auto& p = processes_[i];
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    p.reported = true;
    const std::string who = (p.contexts.size() == 1 ? "context " : "contexts ") + join(p.contexts) +
                            " (pid " + std::to_string(p.child.pid()) + ")";
    if (!p.child.wait_for(std::max(left, std::chrono::milliseconds(0)))) {
      p.child.kill_and_reap();
      problems.push_back(who + " did not exit within " + std::to_string(grace.count() / 1000) +
                         " s of shutdown and was killed");
    } else if (!p.child.exit_status()->clean()) {
      problems.push_back(who + " " + p.child.exit_status()->str() + " at shutdown");
    }
  }
  if (problems.empty()) return ok();
  return Error(join(problems));
}

void LocalCluster::kill_all() {
  for (auto& p : processes_) {
    if (p.child.poll()) continue;
    p.child.kill_and_reap();
    p.reported = true;
  }
}

long LocalCluster::pid_of(const std::string& name) const {
  return static_cast<long>(processes_[context(name).process].child.pid());
}

void LocalCluster::kill(const std::string& name) {
  auto& p = processes_[context(name).process];
  if (p.child.poll()) return;
  p.child.kill_and_reap();
  p.reported = true;
}

std::vector<ContextOutcome> LocalCluster::outcomes() const {
  std::vector<ContextOutcome> out;
  for (const auto& c : contexts_) {
    const auto& child = processes_[c.process].child;
    ContextOutcome o{c.name, static_cast<int>(child.pid()), std::nullopt};
    if (child.exit_status()) o.exit_code = child.exit_status()->shell_code();
    out.push_back(std::move(o));
  }
  return out;
}

}  // namespace daqflow::control
