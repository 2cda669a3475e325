#include "daqflow/control/cluster.hpp"

#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "control/launchers.hpp"
#include "daqflow/control/lease.hpp"
#include "daqflow/control/plan.hpp"
#include "daqflow/core/net.hpp"
#include "daqflow/runtime/access.hpp"

namespace daqflow::control {

namespace {

constexpr int kLogTailLines = 20;
constexpr auto kPollPeriod = std::chrono::milliseconds(50);
// How often the controller tells the executives it is there (at most: a quarter of the shortest
// lease).
constexpr auto kLeasePeriod = std::chrono::milliseconds(1000);
constexpr auto kShortestLeasePeriod = std::chrono::milliseconds(250);

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

namespace {

// Whether mpirun starts every rank of the group on this host (none over ssh): those keep their
// segments in a folder of the run's (plan.hpp).
bool all_here(const runtime::ClusterConfig& config, const std::vector<std::string>& group) {
  return std::none_of(group.begin(), group.end(), [&](const std::string& name) {
    const runtime::HostConfig* h = config.host_of(*config.find_context(name));
    return h != nullptr && h->launcher == runtime::LauncherKind::ssh;
  });
}

// A folder of this run's own in /dev/shm for Open MPI's segments; none (Open MPI's default
// place, where a killed rank's segments stay behind) where it cannot be made.
std::string make_mpi_shm_dir() {
  std::string path = "/dev/shm/daqflow-mpi-XXXXXX";
  if (::mkdtemp(path.data()) == nullptr) {
    spdlog::warn(
        "cannot make {} for the MPI ranks' shared memory ({}): they keep it in Open MPI's "
        "default place, which a killed rank leaves behind",
        path, std::strerror(errno));
    return {};
  }
  return path;
}

}  // namespace

Cluster::Cluster() = default;
Cluster::Cluster(Cluster&&) noexcept = default;
Cluster& Cluster::operator=(Cluster&&) noexcept = default;
Cluster::~Cluster() {
  leases_.reset();
  // What still runs is killed (a Launched kills nothing by itself when destroyed elsewhere).
  for (auto& p : processes_) {
    if (p.launched && !p.launched->poll()) p.launched->kill();
  }
  if (!mpi_shm_dir_.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(mpi_shm_dir_, ignored);
  }
}

namespace {

// Whether the host at `address` refuses a connection to its port: its kernel answers with a reset,
// so nothing listens there any more. A host that does not answer in time, or that cannot be
// reached (its link down: no route, no neighbour), is silent, not refusing.
bool refuses(const HostPort& address, std::chrono::milliseconds timeout) {
  auto resolved = core::resolve(address.host, address.port);
  if (!resolved) return false;
  const core::UniqueFd fd(
      ::socket(resolved->storage.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd) return false;
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&resolved->storage),
                resolved->length) == 0) {
    return false;
  }
  if (errno == ECONNREFUSED) return true;
  if (errno != EINPROGRESS) return false;
  pollfd p{fd.get(), POLLOUT, 0};
  if (::poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return false;
  int error = 0;
  socklen_t length = sizeof error;
  if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &error, &length) != 0) return false;
  return error == ECONNREFUSED;
}

}  // namespace

// An executive started by an earlier controller, or whose launcher lost its connection to the
// host (ssh's keepalives unanswered): alive while its control port answers or is silent. A
// thread per executive probes the port, so that a host that is cut off (each probe then waits
// out its timeouts, up to 2.5 s) does not hold up the controller's loop; poll() only reads what
// the watcher found.
class AttachedLaunched final : public Launched {
 public:
  AttachedLaunched(ControlClient client, Launcher& launcher, std::string context, std::string host)
      : client_(
            client.with_timeouts(std::chrono::milliseconds(500), std::chrono::milliseconds(1500))),
        launcher_(launcher),
        context_(std::move(context)),
        host_(std::move(host)),
        watcher_([this](const std::stop_token& stop) { watch(stop); }) {}

  std::optional<ExitStatus> poll() override {
    if (exit_ || !ended_.load(std::memory_order_acquire)) return exit_;
    exit_ = ExitStatus{end_expected_.load(std::memory_order_relaxed) ? 0 : ExitStatus::kUnknown, 0};
    (void)launcher_.kill_remains(context_);  // what the engine keeps of it (a program entry)
    return exit_;
  }
  void terminate() override {
    if (client_.post("/api/v1/shutdown")) end_expected_.store(true, std::memory_order_relaxed);
  }
  void expect_end() override { end_expected_.store(true, std::memory_order_relaxed); }
  ExitStatus kill() override {
    if (exit_) return *exit_;
    (void)launcher_.kill_remains(context_);
    exit_ = ExitStatus{0, SIGKILL};
    return *exit_;
  }
  [[nodiscard]] const std::optional<ExitStatus>& exit_status() const override { return exit_; }
  [[nodiscard]] std::string where() const override {
    return "pid " + std::to_string(pid()) + " on " + host_ + ", watched through its control port";
  }
  [[nodiscard]] long pid() const override { return pid_.load(std::memory_order_relaxed); }
  [[nodiscard]] std::string local_log() const override { return {}; }

 private:
  // Every 0.5 s: a frozen executive still accepts connections (the kernel does) and then times
  // out, and a host cut off does not answer at all: both are silent, not gone. Three refusals in
  // a row (the host's kernel resets the connection: nothing listens on the port) are an end.
  void watch(const std::stop_token& stop) {
    const ControlClient client = client_;  // the watcher's own
    int refusals = 0;
    while (!stop.stop_requested()) {
      const auto answer = client.get("/api/v1/context");
      const bool refused = !answer && refuses(client.address(), std::chrono::milliseconds(500));
      refusals = refused ? refusals + 1 : 0;
      if (answer && answer->is_object()) {
        pid_.store(answer->value("pid", 0L), std::memory_order_relaxed);
      }
      if (refusals >= 3) {
        ended_.store(true, std::memory_order_release);
        return;
      }
      std::unique_lock lock(mutex_);
      wake_.wait_for(lock, stop, std::chrono::milliseconds(500), [] { return false; });
    }
  }

  ControlClient client_;  // the controller's thread's
  Launcher& launcher_;
  std::string context_;
  std::string host_;
  std::atomic<long> pid_{0};
  std::atomic<bool> end_expected_{false};
  std::atomic<bool> ended_{false};  // the watcher saw three refusals
  std::optional<ExitStatus> exit_;  // the controller's thread's view
  std::mutex mutex_;                // for the watcher's pause, which a stop request ends
  std::condition_variable_any wake_;
  std::jthread watcher_;  // last: stopped and joined before the members it uses go
};

Result<Cluster> Cluster::launch(const runtime::ClusterConfig& config,
                                const std::vector<std::vector<std::string>>& groups,
                                const LaunchOptions& options) {
  return make(config, groups, options, false);
}

Result<Cluster> Cluster::attach(const runtime::ClusterConfig& config,
                                const std::vector<std::vector<std::string>>& groups,
                                const LaunchOptions& options) {
  return make(config, groups, options, true);
}

Result<Cluster> Cluster::make(const runtime::ClusterConfig& config,
                              const std::vector<std::vector<std::string>>& groups,
                              const LaunchOptions& options, bool attach) {
  // The token the control ports ask for, if any (docs/control-api.md, Access).
  auto token = runtime::access_token(config);
  if (!token) return token.error();
  LaunchSettings settings{options.self, options.config_path, "",
                          *token,       options.log_dir,     config.run.number};
  Cluster cluster;
  cluster.config_ = &config;
  std::map<std::string, Launcher*> by_address;
  // Each executive's lease is renewed from the moment it is started: starting the others (a
  // supervisord or an ssh round trip each, seconds under load) can outlast a short lease.
  auto lease_period = kLeasePeriod;
  for (const auto& group : groups) {
    if (group.empty()) continue;
    const runtime::HostConfig* host = config.host_of(*config.find_context(group.front()));
    if (host != nullptr && host->launcher != runtime::LauncherKind::local) {
      lease_period =
          std::min(lease_period, std::chrono::milliseconds(std::int64_t{host->lease_s} * 1000) / 4);
    }
  }
  cluster.leases_ = std::make_unique<LeaseKeeper>(std::vector<ControlClient>{},
                                                  std::max(lease_period, kShortestLeasePeriod));
  for (const auto& group : groups) {
    if (group.empty()) continue;
    const runtime::ContextConfig& first = *config.find_context(group.front());
    const runtime::HostConfig* host = config.host_of(first);
    const bool remote = host != nullptr && host->launcher != runtime::LauncherKind::local;
    if (remote && settings.config_text.empty()) {
      auto text = read_text_file(options.config_path);
      if (!text) return text.error();
      settings.config_text = std::move(*text);
    }
    Launcher*& launcher = by_address[remote ? first.host : std::string()];
    if (launcher == nullptr) {
      auto made = make_launcher(host, first.host, settings);
      if (!made) return made.error();
      cluster.launchers_.push_back(std::move(*made));
      launcher = cluster.launchers_.back().get();
    }
    const auto log_path =
        (std::filesystem::path(options.log_dir) / (group.front() + ".log")).string();
    // Every executive runs under the run's number, whichever gave it (the configuration, the
    // run registry).
    std::vector<std::string> extra{"--run-number", std::to_string(config.run.number)};
    if (!options.record_dir.empty()) {
      extra.insert(extra.end(), {"--record", options.record_dir});
    }
    const auto mpi = config.mpi_contexts();
    const bool mpi_group = std::find(mpi.begin(), mpi.end(), group.front()) != mpi.end();
    if (mpi_group) {
      // mpirun starts every rank, on other hosts through its own ssh.
      for (const auto& name : group) {
        const runtime::ContextConfig& ctx = *config.find_context(name);
        const runtime::HostConfig* h = config.host_of(ctx);
        if (h != nullptr && h->launcher != runtime::LauncherKind::local &&
            h->launcher != runtime::LauncherKind::ssh) {
          return Error(ctx.location.str() + ": context " + ctx.name +
                       " uses the mpi transport, whose ranks mpirun starts (here, or over ssh); "
                       "its host " +
                       ctx.host + " has launcher " + to_string(h->launcher));
        }
      }
    }
    Result<std::unique_ptr<Launched>> started = Error(ErrorCode::conflict, "not started");
    if (attach) {
      ControlClient client(control_address(config, first));
      client.set_token(*token);
      started = std::unique_ptr<Launched>(
          std::make_unique<AttachedLaunched>(client, *launcher, first.name, first.host));
    } else if (mpi_group) {
      if (all_here(config, group) && cluster.mpi_shm_dir_.empty()) {
        cluster.mpi_shm_dir_ = make_mpi_shm_dir();
      }
      started = start_command(launch_command(options.self, options.config_path, group, config,
                                             extra, cluster.mpi_shm_dir_),
                              log_path);
    } else {
      started = launcher->start(LaunchRequest{group, extra, log_path});
    }
    if (!started) return started.error().context("starting context " + group.front());
    Launcher* restartable = attach || mpi_group ? nullptr : launcher;
    cluster.processes_.push_back(Process{group, std::move(*started), false, 0, restartable,
                                         LaunchRequest{group, extra, log_path}});
    ControlClient lease_client(control_address(config, first));
    lease_client.set_token(*token);
    cluster.leases_->add(lease_client.with_timeouts(std::chrono::milliseconds(1000),
                                                    std::chrono::milliseconds(2000)));
  }
  for (const auto& ctx : config.contexts) {
    for (std::size_t p = 0; p < cluster.processes_.size(); ++p) {
      const auto& names = cluster.processes_[p].contexts;
      if (std::find(names.begin(), names.end(), ctx.name) == names.end()) continue;
      ControlClient client(control_address(config, ctx));
      client.set_token(*token);
      cluster.contexts_.push_back(Context{ctx.name, p, std::move(client)});
    }
  }
  return cluster;
}

bool Cluster::stop_requested() const {
  return leases_ && leases_->stop_requested();
}

HostPort control_address(const runtime::ClusterConfig& config, const runtime::ContextConfig& ctx) {
  const runtime::HostConfig* host = config.host_of(ctx);
  const bool remote = host != nullptr && host->launcher != runtime::LauncherKind::local;
  // A port opened on every interface is reached on the loopback (here) or at the host's address
  // (elsewhere); one bound to a single address, there.
  const std::string& bind = ctx.control_bind;
  if (bind == "0.0.0.0" || bind == "::") return {remote ? ctx.host : "127.0.0.1", ctx.control_port};
  if (!remote && runtime::is_loopback(bind)) return {"127.0.0.1", ctx.control_port};
  return {bind, ctx.control_port};
}

const Cluster::Context& Cluster::context(const std::string& name) const {
  for (const auto& c : contexts_) {
    if (c.name == name) return c;
  }
  throw std::out_of_range("no launched context named " + name);
}

const ControlClient& Cluster::client(const std::string& name) const {
  return context(name).client;
}

std::string Cluster::describe_end(const Process& p) const {
  const std::string who =
      p.contexts.size() == 1 ? "context " + p.contexts.front() : "contexts " + join(p.contexts);
  const auto& status = p.launched->exit_status();
  return who + " (" + where_of(p) +
         ") died: " + (status ? status->str() : std::string("still running"));
}

std::vector<Cluster::Death> Cluster::reap_dead() {
  std::vector<Death> deaths;
  for (auto& p : processes_) {
    if (p.reported || !p.launched->poll()) continue;
    if (p.launched->connection_lost() && p.launcher != nullptr) {
      // Not an end yet: its control port says (a cut-off host is silent, not dead; one whose
      // executive ended refuses).
      const runtime::ContextConfig& first = *config_->find_context(p.contexts.front());
      p.launched = std::make_unique<AttachedLaunched>(context(first.name).client, *p.launcher,
                                                      first.name, first.host);
      continue;
    }
    p.reported = true;
    deaths.push_back(Death{p.contexts, describe_end(p), p.launched->exit_status()->clean()});
  }
  return deaths;
}

bool Cluster::alive(const std::string& name) const {
  return !processes_[context(name).process].launched->exit_status().has_value();
}

bool Cluster::any_ending() const {
  return std::any_of(processes_.begin(), processes_.end(),
                     [](const Process& p) { return !p.reported && p.launched->ending(); });
}

std::string Cluster::death_of(const std::string& name) const {
  const auto& p = processes_[context(name).process];
  return p.launched->exit_status() ? describe_end(p) : std::string();
}

Result<void> Cluster::wait_until_reachable(std::chrono::milliseconds timeout,
                                           const std::function<bool()>& abort) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::vector<bool> answered(contexts_.size(), false);
  for (;;) {
    for (auto& p : processes_) {
      if (p.reported || !p.launched->poll()) continue;
      p.reported = true;
      std::string text = describe_end(p) + " before its control port answered";
      const std::string log = p.launched->local_log();
      const auto tail = tail_of_file(log, kLogTailLines);
      if (!tail.empty()) text += "; last lines of " + log + ":\n" + tail;
      return Error(text);
    }
    std::vector<std::string> silent;
    for (std::size_t i = 0; i < contexts_.size(); ++i) {
      if (answered[i]) continue;
      // Short timeouts: an executive still starting refuses at once; one that hangs must not
      // hold up the others' polling.
      const ControlClient probe = contexts_[i].client.with_timeouts(
          std::chrono::milliseconds(200), std::chrono::milliseconds(1000));
      const auto answer = probe.get("/api/v1/context");
      answered[i] = answer.ok();
      if (answered[i] && answer->is_object()) {
        Process& p = processes_[contexts_[i].process];
        if (p.pid == 0) p.pid = answer->value("pid", 0L);
      }
      if (!answered[i])
        silent.push_back(contexts_[i].name + " at " + contexts_[i].client.address().str());
    }
    if (silent.empty()) return ok();
    if (abort && abort())
      return Error(ErrorCode::unavailable, "interrupted while waiting for the control ports");
    if (std::chrono::steady_clock::now() >= deadline) {
      return Error(ErrorCode::timed_out, "no answer from the control port of " + join(silent) +
                                             " within " + std::to_string(timeout.count() / 1000) +
                                             " s (see the logs in the log directory)");
    }
    std::this_thread::sleep_for(kPollPeriod);
  }
}

Result<void> Cluster::shutdown(std::chrono::milliseconds grace) {
  std::vector<bool> was_running(processes_.size(), false);
  for (std::size_t i = 0; i < processes_.size(); ++i) {
    auto& p = processes_[i];
    if (p.launched->poll()) continue;
    was_running[i] = true;
    const ControlClient c =
        context(p.contexts.front())
            .client.with_timeouts(std::chrono::milliseconds(500), std::chrono::milliseconds(2000));
    if (c.post("/api/v1/shutdown").ok()) {
      p.launched->expect_end();
    } else {
      p.launched->terminate();
    }
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
                            " (" + where_of(p) + ")";
    if (!p.launched->wait_for(std::max(left, std::chrono::milliseconds(0)))) {
      p.launched->kill();
      problems.push_back(who + " did not exit within " + std::to_string(grace.count() / 1000) +
                         " s of shutdown and was killed");
    } else if (!p.launched->exit_status()->clean()) {
      problems.push_back(who + " " + p.launched->exit_status()->str() + " at shutdown");
    }
  }
  if (problems.empty()) return ok();
  return Error(join(problems));
}

void Cluster::kill_all() {
  for (auto& p : processes_) {
    if (p.launched->poll()) continue;
    p.launched->kill();
    p.reported = true;
  }
}

Result<void> Cluster::restart(const std::string& name) {
  Process& p = processes_[context(name).process];
  if (p.launcher == nullptr) {
    return Error(ErrorCode::conflict,
                 "context " + name + " cannot be started again by this controller (an mpirun " +
                     "rank, or a context it attached to)");
  }
  if (!p.launched->poll()) return Error(ErrorCode::conflict, "context " + name + " still runs");
  LaunchRequest again = p.request;
  again.extra_args.emplace_back("--restarted");
  auto started = p.launcher->start(again);
  if (!started) return started.error().context("restarting context " + name);
  p.launched = std::move(*started);
  p.reported = false;
  p.pid = 0;
  return ok();
}

Result<std::string> Cluster::run_daqflow(const std::string& name,
                                         const std::vector<std::string>& args) {
  const Process& p = processes_[context(name).process];
  if (p.launcher == nullptr) {
    return Error(ErrorCode::conflict,
                 "context " + name + " was not started by this controller's launchers");
  }
  return p.launcher->run_daqflow(args);
}

const std::vector<std::string>& Cluster::group_of(const std::string& name) const {
  return processes_[context(name).process].contexts;
}

std::string Cluster::where_of(const Process& p) const {
  const std::string where = p.launched->where();
  // Elsewhere, the pid on the host comes from its control API.
  if (p.launched->pid() == 0 && p.pid != 0) return "pid " + std::to_string(p.pid) + " " + where;
  return where;
}

std::string Cluster::where(const std::string& name) const {
  return where_of(processes_[context(name).process]);
}

void Cluster::kill(const std::string& name) {
  auto& p = processes_[context(name).process];
  if (p.launched->poll()) return;
  p.launched->kill();
  p.reported = true;
}

std::vector<ContextOutcome> Cluster::outcomes() const {
  std::vector<ContextOutcome> out;
  for (const auto& c : contexts_) {
    const Process& p = processes_[c.process];
    const long pid = p.launched->pid() != 0 ? p.launched->pid() : p.pid;
    ContextOutcome o{c.name, static_cast<int>(pid), std::nullopt};
    if (p.launched->exit_status()) o.exit_code = p.launched->exit_status()->shell_code();
    out.push_back(std::move(o));
  }
  return out;
}

}  // namespace daqflow::control
