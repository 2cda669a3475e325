#include "app_host.hpp"

#include <spdlog/spdlog.h>

#include <thread>

namespace daqflow::runtime {

namespace {

std::int64_t unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

// The application's agent on its own thread: the lifecycle's rounds (an exception there is a
// bug of the application, which becomes a failure instead of terminating the executive).
class AppHost::Agent final : public core::Agent {
 public:
  explicit Agent(Lifecycle& lifecycle) : lifecycle_(lifecycle) {}

  int do_work() override { return lifecycle_.agent_round(); }

  void wait_for_work(std::chrono::microseconds timeout) override {
    if (!lifecycle_.agent_wait(timeout)) std::this_thread::sleep_for(timeout);
  }

  [[nodiscard]] std::string agent_name() const override { return lifecycle_.id(); }

 private:
  Lifecycle& lifecycle_;
};

AppHost::AppHost(const ClusterConfig& cluster, const ApplicationConfig& self, const AppType& type,
                 std::unique_ptr<Application> app, EndpointFactory endpoints, HostSettings settings,
                 std::mutex& state_mutex,
                 std::function<void(const std::string&)> failure_noted_listener)
    : cluster_(cluster),
      self_(self),
      type_(type),
      endpoints_(std::move(endpoints)),
      settings_(settings),
      params_(self.params.is_null() ? nlohmann::json::object() : self.params),
      state_mutex_(state_mutex),
      lifecycle_(std::move(app), self.id, std::move(failure_noted_listener)) {
  status_.since_unix_ms = unix_ms();
}

AppHost::~AppHost() {
  if (runner_) runner_->stop();
  if (auto r = lifecycle_.release(); !r) {
    spdlog::warn("{}: while the executive was closing: {}", id(), r.error().message());
  }
  if (endpoint_) endpoint_->close();
}

nlohmann::json AppHost::results() const {
  return lifecycle_.results();
}

Result<nlohmann::json> AppHost::action(std::string_view name, const nlohmann::json& args) {
  if (auto r = lifecycle_.action(name, args)) return std::move(*r);
  return Error(ErrorCode::conflict, application_named(id()) + " is not configured (state " +
                                        std::string(to_string(status().state)) +
                                        "): no action now");
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
  if (!made) return made.error().context("endpoint on transport '" + name + "'");
  {
    const std::lock_guard lock(endpoint_mutex_);
    endpoint_ = std::move(*made);
    released_figures_.reset();
    endpoint_transport_ = name;
  }
  lifecycle_.set_endpoint(endpoint_.get());
  return endpoint_.get();
}

std::optional<AppHost::EndpointFigures> AppHost::endpoint_figures() const {
  const std::lock_guard lock(endpoint_mutex_);
  if (!endpoint_) return std::nullopt;
  return EndpointFigures{endpoint_transport_, endpoint_->stats(), endpoint_->peer_stats()};
}

std::optional<AppHost::EndpointFigures> AppHost::last_endpoint_figures() const {
  if (auto live = endpoint_figures()) return live;
  const std::lock_guard lock(endpoint_mutex_);
  return released_figures_;
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
    return Error(ErrorCode::conflict, application_named(id()) + " is " + to_string(state) +
                                          "; parameters can be changed only while Halted or Ready");
  }
  nlohmann::json merged = params_;
  for (const auto& [key, value] : changes.items()) merged[key] = value;
  auto checked = validate_params(type_.params, merged);
  if (!checked) return checked.error().context(application_named(id()));
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
        return Error(application_named(id()) + ": parameter '" + spec.name + "': no application '" +
                     ref + "' in " + cluster_.file);
      }
    }
  }
  params_ = std::move(*checked);
  spdlog::info("{}: parameters changed: {}", id(), json_text(changes));
  return params_;
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
  Result<void> r = lifecycle_.configure(*this);
  if (r) {
    auto idle = core::parse_idle_kind(self_.idle);
    if (!idle) {
      r = idle.error().context("idle");
    } else {
      agent_ = std::make_unique<Agent>(lifecycle_);
      runner_ = std::make_unique<core::AgentRunner>(*agent_, core::AgentOptions{*idle, self_.cpu});
      lifecycle_.set_agent_running(true);
      r = runner_->start();
    }
  }
  finish(State::Ready, std::move(r), "configure");
}

void AppHost::enable() {
  hook_started_ns_ = core::monotonic_ns();
  finish(State::Enabled, lifecycle_.enable(), "enable");
}

void AppHost::suspend() {
  hook_started_ns_ = core::monotonic_ns();
  finish(State::Suspended, lifecycle_.suspend(), "suspend");
}

void AppHost::resume() {
  hook_started_ns_ = core::monotonic_ns();
  finish(State::Enabled, lifecycle_.resume(), "resume");
}

void AppHost::reset() {
  // Failures noted before the Reset belong to the run that failed.
  lifecycle_.forget_failures();
  if (auto r = release_all(); !r) spdlog::warn("{}: {}", id(), r.error().message());
  set_state(State::Halted);
  spdlog::info("{}: Halted (after reset)", id());
}

bool AppHost::halt_begin() {
  hook_started_ns_ = core::monotonic_ns();
  if (auto r = lifecycle_.begin_halt(); !r) {
    fail_now(r.error().message());
    return false;
  }
  return true;
}

bool AppHost::halt_drained() {
  return lifecycle_.drained();
}

void AppHost::halt_finish() {
  if (fail_pending()) return;
  finish(State::Halted, release_all(), "halt");
}

bool AppHost::failure_noted() const {
  return lifecycle_.failure_pending();
}

bool AppHost::fail_pending() {
  std::optional<std::string> reason = lifecycle_.take_failure();
  if (!reason) return false;
  if (status().state == State::Failed) {
    spdlog::debug("{}: already Failed; also: {}", id(), *reason);
    return false;
  }
  fail_now(*reason);
  return true;
}

void AppHost::fail_now(const std::string& reason) {
  if (status().state == State::Failed) return;
  if (auto r = release_all(); !r) spdlog::warn("{}: while failing: {}", id(), r.error().message());
  set_state(State::Failed, reason);
  spdlog::error("{}: Failed: {}", id(), reason);
}

// Stops the agent before anything it uses goes away; the lifecycle drops the probes and releases
// the application; the endpoint goes last (the header's contract).
Result<void> AppHost::release_all() {
  if (runner_) runner_->stop();
  runner_.reset();
  agent_.reset();
  Result<void> r = lifecycle_.release();
  if (endpoint_) {
    endpoint_->close();
    std::unique_ptr<transport::Endpoint> gone;
    {
      const std::lock_guard lock(endpoint_mutex_);
      released_figures_ =
          EndpointFigures{endpoint_transport_, endpoint_->stats(), endpoint_->peer_stats()};
      gone = std::move(endpoint_);
    }
  }
  return r;
}

}  // namespace daqflow::runtime
