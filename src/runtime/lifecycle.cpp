#include "daqflow/runtime/lifecycle.hpp"

#include <spdlog/spdlog.h>

#include <exception>

#include "daqflow/runtime/host_access.hpp"

namespace daqflow::runtime {

namespace {

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

Lifecycle::Lifecycle(std::unique_ptr<Application> app, std::string id,
                     std::function<void(const std::string&)> listener)
    : app_(std::move(app)), id_(std::move(id)), listener_(std::move(listener)) {
  HostAccess::attach(*app_, id_, [this](std::string reason) { note_failure(std::move(reason)); });
}

Lifecycle::~Lifecycle() {
  if (!holding_) return;
  if (auto r = release(); !r) spdlog::warn("{}: while closing: {}", id_, r.error().message());
}

Result<void> Lifecycle::call(const char* hook, const std::function<Result<void>()>& f) {
  try {
    auto r = f();
    if (!r) return std::move(r).error().context(application_named(id_)).context(hook);
    return ok();
  } catch (...) {
    return Error(ErrorCode::internal, "threw: " + exception_text(std::current_exception()))
        .context(application_named(id_))
        .context(hook);
  }
}

Result<void> Lifecycle::configure(AppContext& ctx) {
  if (holding_) {
    if (auto r = release(); !r) return r;
  }
  // The host closed the last run's endpoint after release(): its pools are free to go.
  HostAccess::data_path(*app_).retire_pools();
  HostAccess::begin_run(*app_);
  halt_seen_.store(false, std::memory_order_release);
  agent_faulted_ = false;
  agent_running_ = false;
  ctx_ = &ctx;
  holding_ = true;
  Result<void> r = ok();
  {
    const std::lock_guard busy(hook_mutex_);
    configured_.store(false, std::memory_order_release);
    r = call("configure", [this, &ctx] { return app_->configure(ctx); });
    // A configure() that failed half-way leaves nothing results() may read.
    configured_.store(r.ok(), std::memory_order_release);
  }
  if (r) {
    DataPath& path = HostAccess::data_path(*app_);
    path.attach(ctx.clock(), ctx.metrics());
    path.set_endpoint(endpoint_);
    HostAccess::publish(*app_, RunState::ready);
  }
  return r;
}

Result<void> Lifecycle::enable() {
  auto r = call("enable", [this] { return app_->enable(); });
  if (r) HostAccess::publish(*app_, RunState::enabled);
  return r;
}

Result<void> Lifecycle::suspend() {
  HostAccess::publish(*app_, RunState::suspended);
  return call("suspend", [this] { return app_->suspend(); });
}

Result<void> Lifecycle::resume() {
  auto r = call("resume", [this] { return app_->resume(); });
  if (r) HostAccess::publish(*app_, RunState::enabled);
  return r;
}

Result<void> Lifecycle::begin_halt() {
  halt_seen_.store(false, std::memory_order_release);
  HostAccess::publish(*app_, RunState::halting);
  return call("begin_halt", [this] {
    app_->begin_halt();
    return ok();
  });
}

bool Lifecycle::drained() {
  // Without an agent nothing is in flight; with one, only a round that began after Halting was
  // published makes drained() final (a round begun before may still post).
  if (!agent_running_) return true;
  if (!halt_seen_.load(std::memory_order_acquire)) return false;
  try {
    return app_->drained();
  } catch (...) {
    note_failure("drained threw: " + exception_text(std::current_exception()));
    return true;
  }
}

void Lifecycle::ask_in_flight() {
  if (app_) HostAccess::data_path(*app_).ask_in_flight();
}

std::optional<std::string> Lifecycle::in_flight() const {
  if (!app_) return std::nullopt;
  return HostAccess::data_path(*app_).in_flight();
}

Result<void> Lifecycle::release() {
  if (!app_) return ok();  // abandoned
  agent_running_ = false;
  HostAccess::publish(*app_, RunState::halted);
  Result<void> r = ok();
  if (holding_) {
    holding_ = false;
    if (ctx_ != nullptr) ctx_->metrics().clear_probes();
    // The last results before release() frees what they read.
    (void)results();
    const std::lock_guard busy(hook_mutex_);
    r = call("release", [this] {
      app_->release();
      return ok();
    });
  }
  HostAccess::data_path(*app_).clear();
  set_endpoint(nullptr);
  ctx_ = nullptr;
  return r;
}

void Lifecycle::abandon() {
  agent_running_ = false;
  if (ctx_ != nullptr) ctx_->metrics().clear_probes();
  {
    const std::lock_guard busy(hook_mutex_);
    configured_.store(false, std::memory_order_release);
    holding_ = false;
    ctx_ = nullptr;
    app_.reset();
  }
  const std::lock_guard last(last_results_mutex_);
  last_results_ = nlohmann::json::object();
}

void Lifecycle::set_endpoint(transport::Endpoint* endpoint) {
  endpoint_ = endpoint;
  HostAccess::set_endpoint(*app_, endpoint);
  HostAccess::data_path(*app_).set_endpoint(endpoint);
}

int Lifecycle::agent_round() {
  const bool halting = app_->halting();
  int work = 0;
  if (!agent_faulted_) {
    try {
      work = app_->do_work();
    } catch (const std::exception&) {
      agent_faulted_ = true;
      note_failure("do_work threw: " + exception_text(std::current_exception()));
    } catch (...) {
      if (foreign_exceptions_pass_) throw;
      agent_faulted_ = true;
      note_failure("do_work threw: " + exception_text(std::current_exception()));
    }
  }
  HostAccess::data_path(*app_).settle(halting);
  if (halting && !halt_seen_.load(std::memory_order_relaxed)) {
    halt_seen_.store(true, std::memory_order_release);
  }
  return work;
}

bool Lifecycle::agent_wait(std::chrono::microseconds timeout) {
  if (agent_faulted_) return false;
  try {
    app_->wait_for_work(timeout);
    return true;
  } catch (const std::exception&) {
    agent_faulted_ = true;
    note_failure("wait_for_work threw: " + exception_text(std::current_exception()));
    return false;
  } catch (...) {
    if (foreign_exceptions_pass_) throw;
    agent_faulted_ = true;
    note_failure("wait_for_work threw: " + exception_text(std::current_exception()));
    return false;
  }
}

nlohmann::json Lifecycle::results() const {
  if (!configured_.load(std::memory_order_acquire)) return nlohmann::json::object();
  std::unique_lock busy(hook_mutex_, std::try_to_lock);
  const std::lock_guard last(last_results_mutex_);
  if (busy.owns_lock() && app_) last_results_ = app_->results();
  return last_results_;
}

std::optional<Result<nlohmann::json>> Lifecycle::action(std::string_view name,
                                                        const nlohmann::json& args) {
  std::unique_lock busy(hook_mutex_, std::try_to_lock);
  if (!busy.owns_lock() || !configured_.load(std::memory_order_acquire)) return std::nullopt;
  try {
    return app_->action(name, args);
  } catch (...) {
    return Error(ErrorCode::internal, application_named(id_) + ": action '" + std::string(name) +
                                          "' threw: " + exception_text(std::current_exception()));
  }
}

void Lifecycle::note_failure(std::string reason) {
  // The data path stops starting new work at once, whoever reported the failure.
  if (app_) HostAccess::mark_failed(*app_);
  {
    const std::lock_guard lock(failure_mutex_);
    if (pending_failure_) {
      spdlog::debug("{}: failing already; also: {}", id_, reason);
    } else {
      pending_failure_ = reason;
    }
    failure_noted_.store(true, std::memory_order_release);
  }
  if (listener_) listener_(reason);
}

bool Lifecycle::failure_pending() const {
  return failure_noted_.load(std::memory_order_acquire);
}

std::optional<std::string> Lifecycle::take_failure() {
  if (!failure_noted_.load(std::memory_order_acquire)) return std::nullopt;
  const std::lock_guard lock(failure_mutex_);
  std::optional<std::string> first = std::move(pending_failure_);
  pending_failure_.reset();
  failure_noted_.store(false, std::memory_order_release);
  return first;
}

void Lifecycle::forget_failures() {
  const std::lock_guard lock(failure_mutex_);
  pending_failure_.reset();
  failure_noted_.store(false, std::memory_order_release);
}

}  // namespace daqflow::runtime
