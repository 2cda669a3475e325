#include "app_host.hpp"

#include <spdlog/spdlog.h>

#include <exception>
#include <thread>

#include "daqflow/runtime/host_access.hpp"

namespace daqflow::runtime {

namespace {

std::int64_t unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string exception_text(const std::exception_ptr& ep) {
  try {
    std::rethrow_exception(ep);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "an exception that is not a std::exception";
  }
}

}  // namespace

// Runs the application's do_work() on the agent thread. An exception there is a bug of the
// application; it becomes a failure (reported once) instead of terminating the executive, and
// the agent stays quiet until the control thread stops it. It records that a call began after
// Halting was published, so that drained() is asked only once the data path has seen it.
class AppHost::Agent final : public core::Agent {
 public:
  Agent(Application& app, std::atomic<bool>& halt_seen, std::function<void(std::string)> report)
      : app_(app), halt_seen_(halt_seen), report_(std::move(report)) {}

  int do_work() override {
    const bool halting = app_.halting();
    int work = 0;
    if (!faulted_) {
      try {
        work = app_.do_work();
      } catch (...) {
        fault("do_work threw: " + exception_text(std::current_exception()));
      }
    }
    if (halting && !halt_seen_.load(std::memory_order_relaxed)) {
      halt_seen_.store(true, std::memory_order_release);
    }
    return work;
  }

  void wait_for_work(std::chrono::microseconds timeout) override {
    if (faulted_) {
      std::this_thread::sleep_for(timeout);
      return;
    }
    try {
      app_.wait_for_work(timeout);
    } catch (...) {
      fault("wait_for_work threw: " + exception_text(std::current_exception()));
    }
  }

  [[nodiscard]] std::string agent_name() const override { return app_.id(); }

 private:
  void fault(std::string reason) {
    faulted_ = true;
    report_(std::move(reason));
  }

  Application& app_;
  std::atomic<bool>& halt_seen_;
  std::function<void(std::string)> report_;
  bool faulted_ = false;  // agent thread only
};

AppHost::AppHost(const ClusterConfig& cluster, const ApplicationConfig& self, const AppType& type,
                 std::unique_ptr<Application> app, EndpointFactory endpoints, HostSettings settings,
                 std::mutex& state_mutex, std::function<void(std::string)> report_failure)
    : cluster_(cluster),
      self_(self),
      type_(type),
      app_(std::move(app)),
      endpoints_(std::move(endpoints)),
      settings_(settings),
      params_(self.params.is_null() ? nlohmann::json::object() : self.params),
      state_mutex_(state_mutex),
      report_failure_(std::move(report_failure)) {
  status_.since_unix_ms = unix_ms();
  HostAccess::attach(*app_, self.id, report_failure_);
}

AppHost::~AppHost() {
  if (runner_) runner_->stop();
  if (holding_) {
    metrics_.clear_probes();
    try {
      app_->release();
    } catch (...) {
      spdlog::warn("{}: release threw while the executive was closing", id());
    }
  }
  if (endpoint_) endpoint_->close();
}

void AppHost::publish(RunState state) {
  HostAccess::publish(*app_, state);
}

nlohmann::json AppHost::results() const {
  if (!configured_.load(std::memory_order_acquire)) return nlohmann::json::object();
  std::unique_lock busy(results_mutex_, std::try_to_lock);
  std::lock_guard last(last_results_mutex_);
  if (busy.owns_lock()) last_results_ = app_->results();
  return last_results_;
}

Result<nlohmann::json> AppHost::action(std::string_view name, const nlohmann::json& args) {
  std::unique_lock busy(results_mutex_, std::try_to_lock);
  if (!busy.owns_lock() || !configured_.load(std::memory_order_acquire)) {
    return Error(ErrorCode::conflict, "application '" + id() + "' is not configured (state " +
                                          std::string(to_string(status().state)) +
                                          "): no action now");
  }
  try {
    return app_->action(name, args);
  } catch (...) {
    return Error(ErrorCode::internal, "application '" + id() + "': action '" + std::string(name) +
                                          "' threw: " + exception_text(std::current_exception()));
  }
}

core::Clock& AppHost::clock() {
  return settings_.clock != nullptr ? *settings_.clock : core::MonotonicClock::instance();
}

Result<transport::Endpoint*> AppHost::endpoint(const transport::EndpointOptions* options) {
  if (endpoint_) return endpoint_.get();
  transport::EndpointOptions opts = options != nullptr ? *options : endpoint_options();
  opts.self = self_.index;
  const std::string& name =
      self_.transport.empty() ? cluster_.transports.default_transport : self_.transport;
  auto made = endpoints_(name, opts);
  if (!made) {
    return made.error().context("application '" + id() + "': endpoint on transport '" + name + "'");
  }
  {
    const std::lock_guard lock(endpoint_mutex_);
    endpoint_ = std::move(*made);
    endpoint_transport_ = name;
  }
  HostAccess::set_endpoint(*app_, endpoint_.get());
  return endpoint_.get();
}

std::optional<AppHost::EndpointFigures> AppHost::endpoint_figures() const {
  const std::lock_guard lock(endpoint_mutex_);
  if (!endpoint_) return std::nullopt;
  return EndpointFigures{endpoint_transport_, endpoint_->stats(), endpoint_->peer_stats()};
}

AppHost::Status AppHost::status() const {
  std::lock_guard lock(state_mutex_);
  return status_;
}

nlohmann::json AppHost::params_json() const {
  std::lock_guard lock(state_mutex_);
  return params_;
}

Result<nlohmann::json> AppHost::update_params(const nlohmann::json& changes) {
  if (!changes.is_object()) {
    return Error("the body must be a JSON object of parameters, e.g. {\"name\": value}");
  }
  std::lock_guard lock(state_mutex_);
  const State state = status_.state;
  if (state != State::Halted && state != State::Ready) {
    return Error(ErrorCode::conflict, "application '" + id() + "' is " + to_string(state) +
                                          "; parameters can be changed only while Halted or Ready");
  }
  nlohmann::json merged = params_;
  for (const auto& [key, value] : changes.items()) merged[key] = value;
  auto checked = validate_params(type_.params, merged);
  if (!checked) return checked.error().context("application '" + id() + "'");
  // validate_params cannot see the cluster; references to other applications are checked here.
  for (const ParamSpec& spec : type_.params) {
    const auto it = checked->find(spec.name);
    if (it == checked->end()) continue;
    std::vector<std::string> ids;
    if (spec.kind == ParamKind::app_ref && it->is_string()) ids.push_back(it->get<std::string>());
    if (spec.kind == ParamKind::app_ref_list && it->is_array()) {
      for (const auto& e : *it) {
        if (e.is_string()) ids.push_back(e.get<std::string>());
      }
    }
    for (const std::string& ref : ids) {
      // An empty reference means "no peer" where the type allows it (validate_params checked).
      if (!ref.empty() && cluster_.find_application(ref) == nullptr) {
        return Error("application '" + id() + "': parameter '" + spec.name + "': no application '" +
                     ref + "' in " + cluster_.file);
      }
    }
  }
  params_ = std::move(*checked);
  spdlog::info("{}: parameters changed: {}", id(), json_text(changes));
  return params_;
}

void AppHost::note_failure(std::string reason) {
  // The data path stops starting new work at once, whoever reported the failure.
  HostAccess::mark_failed(*app_);
  std::lock_guard lock(failure_mutex_);
  if (!pending_failure_) pending_failure_ = std::move(reason);
  failure_noted_.store(true, std::memory_order_release);
}

std::optional<Transition> AppHost::begin_locked(Command command) {
  const auto t = transition(status_.state, command);
  if (!t) return std::nullopt;
  status_.state = t->during;
  status_.reason.clear();
  status_.since_unix_ms = unix_ms();
  return t;
}

void AppHost::set_state(State state, std::string reason) {
  std::lock_guard lock(state_mutex_);
  status_.state = state;
  status_.reason = std::move(reason);
  status_.since_unix_ms = unix_ms();
}

Result<void> AppHost::call_hook(const char* hook, const std::function<Result<void>()>& f) {
  try {
    auto r = f();
    if (!r) return r.error().context(hook);
    return ok();
  } catch (...) {
    return Error(std::string(hook) + " threw: " + exception_text(std::current_exception()));
  }
}

void AppHost::finish(State target, Result<void> result, const char* hook) {
  if (!result) {
    fail_now(result.error().message());
    return;
  }
  if (fail_pending()) return;
  set_state(target);
  const auto took_ms = (core::monotonic_ns() - hook_started_ns_) / 1'000'000;
  spdlog::info("{}: {} (after {} in {} ms)", id(), to_string(target), hook, took_ms);
}

void AppHost::configure() {
  hook_started_ns_ = core::monotonic_ns();
  metrics_.reset_counters();
  holding_ = true;
  HostAccess::begin_run(*app_);
  configured_.store(false, std::memory_order_release);
  halt_seen_.store(false, std::memory_order_release);
  Result<void> r = ok();
  {
    std::lock_guard lock(results_mutex_);
    r = call_hook("configure", [this] { return app_->configure(*this); });
    // A configure() that failed half-way leaves nothing results() may read.
    configured_.store(r.ok(), std::memory_order_release);
  }
  if (r) {
    publish(RunState::ready);
    auto idle = core::parse_idle_kind(self_.idle);
    if (!idle) {
      r = idle.error().context("idle");
    } else {
      // The agent reports failures through the same path as the application.
      agent_ = std::make_unique<Agent>(*app_, halt_seen_, report_failure_);
      runner_ = std::make_unique<core::AgentRunner>(*agent_, core::AgentOptions{*idle, self_.cpu});
      r = runner_->start();
    }
  }
  finish(State::Ready, std::move(r), "configure");
}

void AppHost::enable() {
  hook_started_ns_ = core::monotonic_ns();
  auto r = call_hook("enable", [this] { return app_->enable(); });
  if (r) publish(RunState::enabled);
  finish(State::Enabled, std::move(r), "enable");
}

void AppHost::suspend() {
  hook_started_ns_ = core::monotonic_ns();
  publish(RunState::suspended);
  finish(State::Suspended, call_hook("suspend", [this] { return app_->suspend(); }), "suspend");
}

void AppHost::resume() {
  hook_started_ns_ = core::monotonic_ns();
  auto r = call_hook("resume", [this] { return app_->resume(); });
  if (r) publish(RunState::enabled);
  finish(State::Enabled, std::move(r), "resume");
}

void AppHost::reset() {
  {
    // Failures noted before the Reset belong to the run that failed.
    std::lock_guard lock(failure_mutex_);
    pending_failure_.reset();
    failure_noted_.store(false, std::memory_order_release);
  }
  if (auto r = release_all(); !r) spdlog::warn("{}: {}", id(), r.error().message());
  set_state(State::Halted);
  spdlog::info("{}: Halted (after reset)", id());
}

bool AppHost::halt_begin() {
  hook_started_ns_ = core::monotonic_ns();
  halt_seen_.store(false, std::memory_order_release);
  publish(RunState::halting);
  auto r = call_hook("begin_halt", [this] {
    app_->begin_halt();
    return ok();
  });
  if (!r) {
    fail_now(r.error().message());
    return false;
  }
  return true;
}

bool AppHost::halt_drained() {
  // Without an agent nothing is in flight; with one, only a do_work() call that began after
  // Halting was published makes drained() final (a call begun before may still post).
  if (!runner_) return true;
  if (!halt_seen_.load(std::memory_order_acquire)) return false;
  try {
    return app_->drained();
  } catch (...) {
    note_failure("drained threw: " + exception_text(std::current_exception()));
    return true;
  }
}

void AppHost::halt_finish() {
  if (fail_pending()) return;
  finish(State::Halted, release_all(), "halt");
}

bool AppHost::failure_noted() const {
  return failure_noted_.load(std::memory_order_acquire);
}

bool AppHost::fail_pending() {
  if (!failure_noted_.load(std::memory_order_acquire)) return false;
  std::string reason;
  {
    std::lock_guard lock(failure_mutex_);
    if (!pending_failure_) return false;
    reason = std::move(*pending_failure_);
    pending_failure_.reset();
    failure_noted_.store(false, std::memory_order_release);
  }
  if (status().state == State::Failed) {
    spdlog::debug("{}: already Failed; also: {}", id(), reason);
    return false;
  }
  fail_now(reason);
  return true;
}

void AppHost::fail_now(const std::string& reason) {
  if (status().state == State::Failed) return;
  if (auto r = release_all(); !r) spdlog::warn("{}: while failing: {}", id(), r.error().message());
  set_state(State::Failed, reason);
  spdlog::error("{}: Failed: {}", id(), reason);
}

// Stops the agent before anything it uses goes away; probes are dropped before release() so
// that no snapshot reads a pool being freed; the endpoint goes last (the header's contract).
Result<void> AppHost::release_all() {
  if (runner_) runner_->stop();
  runner_.reset();
  agent_.reset();
  metrics_.clear_probes();
  publish(RunState::halted);
  Result<void> r = ok();
  if (holding_) {
    holding_ = false;
    // The last results before release() frees what they read.
    (void)results();
    std::lock_guard lock(results_mutex_);
    r = call_hook("release", [this] {
      app_->release();
      return ok();
    });
  }
  HostAccess::set_endpoint(*app_, nullptr);
  if (endpoint_) {
    endpoint_->close();
    std::unique_ptr<transport::Endpoint> gone;
    {
      const std::lock_guard lock(endpoint_mutex_);
      gone = std::move(endpoint_);
    }
  }
  return r;
}

}  // namespace daqflow::runtime
