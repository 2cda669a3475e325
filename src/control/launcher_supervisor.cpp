// The supervisor launcher (docs/deployment.md): supervisord on the host, driven through its
// XML-RPC API (xmlrpc-c's client). The host's supervisord needs the twiddler interface
// (supervisor_twiddler, which adds and removes programs at run time) and an empty group for
// daqflow's programs:
//
//   [rpcinterface:twiddler]
//   supervisor.rpcinterface_factory = supervisor_twiddler.rpcinterface:make_twiddler_rpcinterface
//   [group:daqflow]
//   programs =
//
// For each executive: a program named after its first context is added to the group (no
// autostart, no autorestart: the restart policy is daqflow's), started, and sent the
// configuration on its stdin; supervisord keeps its output, read back with
// tailProcessStdoutLog. When it has ended, its output is copied to the controller's log
// directory and the program is removed.
//
// Each executive's program is watched by a thread of its own: a call to a supervisord whose host
// is cut off waits out its timeout, and the controller's loop (the other contexts, the leases,
// the control polls that notice the silence) must not wait with it.
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <mutex>
#include <stop_token>
#include <thread>
#include <xmlrpc-c/base.hpp>
#include <xmlrpc-c/client.hpp>
#include <xmlrpc-c/client_transport.hpp>

#include "control/launchers.hpp"
#include "daqflow/core/log.hpp"

namespace daqflow::control {

namespace {

constexpr unsigned kCallTimeoutMs = 10000;
// The watcher's calls: three in a row unanswered (about 10 s, as long as ssh's keepalives take)
// and the connection to the host counts as lost.
constexpr unsigned kWatchTimeoutMs = 3000;
constexpr int kWatchFailures = 3;
constexpr auto kProgramPollPeriod = std::chrono::milliseconds(300);
constexpr int kLogBytes = 1 << 20;
constexpr const char* kGroup = "daqflow";

// One supervisord's XML-RPC API.
class Supervisor {
 public:
  Supervisor(std::string url, std::string user, std::string password,
             unsigned timeout_ms = kCallTimeoutMs)
      : url_(std::move(url)),
        user_(std::move(user)),
        password_(std::move(password)),
        timeout_ms_(timeout_ms) {}

  // Another client of the same supervisord, for another thread (a client is used by one thread
  // at a time), its calls given up after timeout_ms. Made on the calling thread.
  [[nodiscard]] std::unique_ptr<Supervisor> another(unsigned timeout_ms) const {
    auto s = std::make_unique<Supervisor>(url_, user_, password_, timeout_ms);
    s->open();
    return s;
  }

  Result<xmlrpc_c::value> call(const std::string& method, const xmlrpc_c::paramList& params) {
    try {
      open();
      xmlrpc_c::carriageParm_curl0 where(url_);
      if (!user_.empty()) {
        where.setUser(user_, password_);
        where.allowAuthBasic();
      }
      xmlrpc_c::rpcPtr rpc(method, params);
      rpc->call(client_.get(), &where);
      if (!rpc->isSuccessful()) {
        const xmlrpc_c::fault f = rpc->getFault();
        return Error(ErrorCode::unavailable,
                     fmt::format("supervisord at {}: {}: {} ({})", url_, method, f.getDescription(),
                                 static_cast<int>(f.getCode())));
      }
      return rpc->getResult();
    } catch (const std::exception& e) {
      return Error(ErrorCode::unavailable,
                   fmt::format("supervisord at {}: {}: {}", url_, method, e.what()));
    }
  }

  // supervisor.getProcessInfo as a map; an error when the program is not there.
  Result<std::map<std::string, xmlrpc_c::value>> info(const std::string& full_name) {
    xmlrpc_c::paramList p;
    p.add(xmlrpc_c::value_string(full_name));
    auto r = call("supervisor.getProcessInfo", p);
    if (!r) return r.error();
    return static_cast<std::map<std::string, xmlrpc_c::value>>(xmlrpc_c::value_struct(*r));
  }

  // The last lines of a program's output as supervisord keeps it.
  Result<std::string> tail(const std::string& full_name, int lines) {
    xmlrpc_c::paramList p;
    p.add(xmlrpc_c::value_string(full_name));
    p.add(xmlrpc_c::value_int(0));
    p.add(xmlrpc_c::value_int(kLogBytes));
    auto r = call("supervisor.tailProcessStdoutLog", p);
    if (!r) return r.error();
    const std::vector<xmlrpc_c::value> parts = xmlrpc_c::value_array(*r).vectorValueValue();
    std::string text = static_cast<std::string>(xmlrpc_c::value_string(parts.at(0)));
    return tail_lines(text, lines);
  }

  Result<void> signal(const std::string& full_name, const char* sig) {
    return call_void("supervisor.signalProcess", {full_name, sig});
  }

  Result<void> remove(const std::string& name) {
    return call_void("twiddler.removeProcessFromGroup", {kGroup, name});
  }

  // A call whose answer says nothing but that it worked, with string parameters.
  Result<void> call_void(const std::string& method, std::initializer_list<std::string> args) {
    xmlrpc_c::paramList p;
    for (const auto& a : args) p.add(xmlrpc_c::value_string(a));
    if (auto r = call(method, p); !r) return r.error();
    return ok();
  }

  [[nodiscard]] const std::string& url() const { return url_; }

  void open() {
    if (transport_) return;
    transport_ = std::make_unique<xmlrpc_c::clientXmlTransport_curl>(
        xmlrpc_c::clientXmlTransport_curl::constrOpt().timeout(timeout_ms_));
    client_ = std::make_unique<xmlrpc_c::client_xml>(transport_.get());
  }

  static std::string tail_lines(std::string text, int lines) {
    std::size_t pos = text.size();
    if (pos > 0 && text.back() == '\n') --pos;
    for (int n = 0; n < lines && pos > 0; ++n) {
      const auto nl = text.rfind('\n', pos - 1);
      if (nl == std::string::npos) return text;
      pos = nl;
      if (n + 1 == lines) return text.substr(nl + 1);
    }
    return text;
  }

 private:
  std::string url_;
  std::string user_;
  std::string password_;
  unsigned timeout_ms_;
  std::unique_ptr<xmlrpc_c::clientXmlTransport_curl> transport_;
  std::unique_ptr<xmlrpc_c::client_xml> client_;
};

std::string state_of(const std::map<std::string, xmlrpc_c::value>& info) {
  const auto it = info.find("statename");
  return it == info.end() ? std::string()
                          : static_cast<std::string>(xmlrpc_c::value_string(it->second));
}

int int_of(const std::map<std::string, xmlrpc_c::value>& info, const char* key) {
  const auto it = info.find(key);
  return it == info.end() ? 0 : static_cast<int>(xmlrpc_c::value_int(it->second));
}

bool running_state(const std::string& state) {
  return state == "STARTING" || state == "RUNNING" || state == "BACKOFF" || state == "STOPPING";
}

class SupervisorLaunched final : public Launched {
 public:
  SupervisorLaunched(std::shared_ptr<Supervisor> sup, std::string name, std::string address,
                     std::string local_log)
      : sup_(std::move(sup)),
        watch_sup_(sup_->another(kWatchTimeoutMs)),
        name_(std::move(name)),
        full_(std::string(kGroup) + ":" + name_),
        address_(std::move(address)),
        local_log_(std::move(local_log)),
        watcher_([this](const std::stop_token& stop) { watch(stop); }) {}

  std::optional<ExitStatus> poll() override {
    if (exit_) return exit_;
    const std::lock_guard lock(mutex_);
    exit_ = seen_;
    return exit_;
  }

  void terminate() override { (void)sup_->signal(full_, "TERM"); }

  ExitStatus kill() override {
    if (poll()) return *exit_;
    (void)sup_->signal(full_, "KILL");
    if (auto s = wait_for(std::chrono::seconds(5))) return *s;
    exit_ = ExitStatus{0, SIGKILL};
    return *exit_;
  }

  [[nodiscard]] const std::optional<ExitStatus>& exit_status() const override { return exit_; }
  // supervisord stopped answering: the executive may still run there (a cut-off host), and the
  // controller watches it through its control port, as when ssh loses its host.
  [[nodiscard]] bool connection_lost() const override {
    return exit_ && lost_.load(std::memory_order_acquire);
  }
  [[nodiscard]] std::string where() const override {
    return "pid " + std::to_string(pid_.load(std::memory_order_relaxed)) + " on " + address_ +
           " via supervisord";
  }
  [[nodiscard]] long pid() const override { return pid_.load(std::memory_order_relaxed); }
  [[nodiscard]] std::string local_log() const override { return local_log_; }

 private:
  // The watcher thread: the program's state every kProgramPollPeriod until it has ended (then its
  // output is copied here and the program removed) or supervisord stops answering.
  void watch(const std::stop_token& stop) {
    int failures = 0;
    while (!stop.stop_requested()) {
      if (auto info = watch_sup_->info(full_); !info) {
        // supervisord does not answer (its host is cut off, or it died).
        if (++failures >= kWatchFailures) {
          lost_.store(true, std::memory_order_release);
          publish(ExitStatus{ExitStatus::kUnknown, 0});
          return;
        }
      } else {
        failures = 0;
        if (const int pid = int_of(*info, "pid"); pid != 0) {
          pid_.store(pid, std::memory_order_relaxed);
        }
        const std::string state = state_of(*info);
        if (!running_state(state)) {
          // EXITED (its own end: supervisord's exitstatus), STOPPED (stopped through the API),
          // FATAL (could not be started).
          ExitStatus s{int_of(*info, "exitstatus"), 0};
          if (state == "FATAL") s.code = 127;
          if (state == "STOPPED" && s.code == 0) s.signal = SIGTERM;
          keep_output();
          publish(s);
          return;
        }
      }
      std::unique_lock lock(mutex_);
      wake_.wait_for(lock, stop, kProgramPollPeriod, [] { return false; });
    }
  }

  // Its output into the controller's log directory, then the program out of supervisord.
  void keep_output() {
    if (auto out = watch_sup_->tail(full_, 1 << 20); out) {
      std::error_code ec;
      std::filesystem::create_directories(std::filesystem::path(local_log_).parent_path(), ec);
      std::ofstream log(local_log_, std::ios::app);
      log << *out;
      if (!log.flush()) {
        spdlog::warn("cannot keep the output of {} in {}", full_, local_log_);
      }
    }
    (void)watch_sup_->remove(name_);
  }

  void publish(ExitStatus s) {
    const std::lock_guard lock(mutex_);
    seen_ = s;
  }

  std::shared_ptr<Supervisor> sup_;        // the controller's thread's client
  std::unique_ptr<Supervisor> watch_sup_;  // the watcher's
  std::string name_;
  std::string full_;
  std::string address_;
  std::string local_log_;
  std::atomic<long> pid_{0};
  std::atomic<bool> lost_{false};
  std::optional<ExitStatus> exit_;  // the controller's thread's view
  std::mutex mutex_;
  std::condition_variable_any wake_;
  std::optional<ExitStatus> seen_;  // the watcher's finding, under mutex_
  std::jthread watcher_;            // last: stopped and joined before the members it uses go
};

class SupervisorLauncher final : public Launcher {
 public:
  SupervisorLauncher(const runtime::HostConfig& host, std::string address, LaunchSettings settings,
                     std::string password)
      : host_(host),
        address_(std::move(address)),
        settings_(std::move(settings)),
        sup_(std::make_shared<Supervisor>(
            host.supervisor.url.empty() ? "http://" + address_ + ":9001/RPC2" : host.supervisor.url,
            host.supervisor.user, std::move(password))) {}

  Result<std::unique_ptr<Launched>> start(const LaunchRequest& request) override {
    const std::string& name = request.contexts.front();
    const std::string full = std::string(kGroup) + ":" + name;
    // What an earlier run left: removed if it has ended, refused if it runs.
    if (auto info = sup_->info(full); info) {
      if (running_state(state_of(*info))) {
        return Error(ErrorCode::conflict, "context " + name + " still runs under supervisord on " +
                                              address_ +
                                              " (a run that did not end? daqflow stop ends it)");
      }
      if (auto r = sup_->remove(name); !r) return r.error();
    }
    std::string command;
    for (const auto& w : remote_exec_command(host_, settings_, request)) {
      command += (command.empty() ? "" : " ") + shell_quote(w);
    }
    if (auto r = add_program(name, fmt::format("mkdir -p {0} {1} && cd {0} && exec {2}",
                                               shell_quote(host_workdir(host_)),
                                               shell_quote(host_log_dir(host_)), command));
        !r) {
      return r.error().context("adding context " + name);
    }
    if (auto r = start_with_config(full); !r) {
      (void)sup_->remove(name);
      return r.error().context("starting context " + name);
    }
    return std::unique_ptr<Launched>(
        std::make_unique<SupervisorLaunched>(sup_, name, address_, request.local_log));
  }

  Result<std::string> log_tail(const std::string& context, int lines) override {
    auto r = sup_->tail(std::string(kGroup) + ":" + context, lines);
    if (r) return r;
    // Removed at its end: what the controller copied, when it ran here.
    const std::string copy = settings_.log_dir + "/" + context + ".log";
    std::ifstream in(copy);
    if (!in) return r.error();
    return tail_of_file(copy, lines);
  }

  // A one-shot program: added, started, sent the configuration, waited for, its output read,
  // removed.
  Result<std::string> run_daqflow(const std::vector<std::string>& args) override {
    const std::string name = "tool-" + std::to_string(::getpid());
    const std::string full = std::string(kGroup) + ":" + name;
    std::string command;
    std::vector<std::string> words{host_.daqflow.empty() ? settings_.self : host_.daqflow};
    words.insert(words.end(), args.begin(), args.end());
    words.emplace_back("--config-stdin");
    for (const auto& w : words) command += (command.empty() ? "" : " ") + shell_quote(w);
    if (auto r = add_program(name, fmt::format("mkdir -p {0} {1} && cd {0} && exec {2}",
                                               shell_quote(host_workdir(host_)),
                                               shell_quote(host_log_dir(host_)), command));
        !r) {
      return r.error();
    }
    if (auto r = start_with_config(full); !r) {
      (void)sup_->remove(name);
      return r.error();
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    std::map<std::string, xmlrpc_c::value> info;
    for (;;) {
      auto now = sup_->info(full);
      if (!now) return now.error();
      info = std::move(*now);
      if (!running_state(state_of(info))) break;
      if (std::chrono::steady_clock::now() >= deadline) {
        (void)sup_->signal(full, "KILL");
        (void)sup_->remove(name);
        return Error(ErrorCode::timed_out,
                     "daqflow " + args.front() + " on " + address_ + " did not end within 120 s");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    auto out = sup_->tail(full, 1000);
    (void)sup_->remove(name);
    if (!out) return out.error();
    if (state_of(info) != "EXITED" || int_of(info, "exitstatus") != 0) {
      return Error(ErrorCode::unavailable, "on " + address_ + ": " + *out);
    }
    return out;
  }

  Result<void> kill_remains(const std::string& context) override {
    const std::string full = std::string(kGroup) + ":" + context;
    auto info = sup_->info(full);
    if (!info) return ok();  // not there
    if (running_state(state_of(*info))) {
      if (auto r = sup_->signal(full, "KILL"); !r) return r;
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
      while (std::chrono::steady_clock::now() < deadline) {
        auto now = sup_->info(full);
        if (!now || !running_state(state_of(*now))) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
    return sup_->remove(context);
  }

 private:
  // A program in daqflow's group running script with /bin/sh, started only when asked, never
  // restarted by supervisord, stopped and killed as a process group, stderr with stdout.
  Result<void> add_program(const std::string& name, const std::string& script) {
    std::string program = "/bin/sh -c " + shell_quote(script);
    // supervisord expands %(name)s in a command: a literal % is written %%.
    std::string escaped;
    for (const char c : program) escaped += c == '%' ? std::string("%%") : std::string(1, c);
    std::map<std::string, xmlrpc_c::value> options{
        {"command", xmlrpc_c::value_string(escaped)},
        {"autostart", xmlrpc_c::value_string("false")},
        {"autorestart", xmlrpc_c::value_string("false")},
        {"startsecs", xmlrpc_c::value_string("0")},
        {"startretries", xmlrpc_c::value_string("0")},
        {"redirect_stderr", xmlrpc_c::value_string("true")},
        {"stopasgroup", xmlrpc_c::value_string("true")},
        {"killasgroup", xmlrpc_c::value_string("true")},
        {"stopwaitsecs", xmlrpc_c::value_string("30")},
        {"stdout_logfile_maxbytes", xmlrpc_c::value_string("64MB")}};
    xmlrpc_c::paramList add;
    add.add(xmlrpc_c::value_string(kGroup));
    add.add(xmlrpc_c::value_string(name));
    add.add(xmlrpc_c::value_struct(options));
    if (auto r = sup_->call("twiddler.addProgramToGroup", add); !r) {
      return r.error().context("supervisord's group " + std::string(kGroup) +
                               " (the host needs supervisor_twiddler and [group:daqflow], "
                               "docs/deployment.md)");
    }
    return ok();
  }

  // Starts it and sends it the configuration line.
  Result<void> start_with_config(const std::string& full) {
    xmlrpc_c::paramList run;
    run.add(xmlrpc_c::value_string(full));
    run.add(xmlrpc_c::value_boolean(true));
    if (auto r = sup_->call("supervisor.startProcess", run); !r) return r.error();
    xmlrpc_c::paramList input;
    input.add(xmlrpc_c::value_string(full));
    input.add(xmlrpc_c::value_string(config_delivery(settings_)));
    if (auto r = sup_->call("supervisor.sendProcessStdin", input); !r) {
      (void)sup_->signal(full, "KILL");
      return r.error().context("sending the configuration");
    }
    return ok();
  }

  const runtime::HostConfig& host_;
  std::string address_;
  LaunchSettings settings_;
  std::shared_ptr<Supervisor> sup_;
};

}  // namespace

Result<std::unique_ptr<Launcher>> make_supervisor_launcher(const runtime::HostConfig& host,
                                                           const std::string& address,
                                                           const LaunchSettings& settings) {
  std::string password;
  if (!host.supervisor.password_file.empty()) {
    std::ifstream in(host.supervisor.password_file);
    if (!in || !std::getline(in, password) || password.empty()) {
      return Error(ErrorCode::unavailable, host.location.str() + ": host " + address +
                                               ": cannot read the supervisord "
                                               "password from " +
                                               host.supervisor.password_file);
    }
  }
  return std::unique_ptr<Launcher>(
      std::make_unique<SupervisorLauncher>(host, address, settings, std::move(password)));
}

}  // namespace daqflow::control
