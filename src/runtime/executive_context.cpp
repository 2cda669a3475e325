#include "executive_context.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <exception>

namespace daqflow::runtime {

namespace {

std::string where(const ApplicationConfig& app) {
  return app.location.file.empty() ? std::string() : app.location.str() + ": ";
}

// What a context-wide command leaves alone: applications already where it leads, and Failed
// ones on Halt (a Halt must not hide a failure; Reset clears it).
bool leaves_alone(State state, Command command) {
  return state == target_state(command) || (command == Command::Halt && state == State::Failed);
}

// The state a command enters when it is accepted (the same from every state that allows it).
State during_state(Command command) {
  for (const State s : kAllStates) {
    if (const auto t = transition(s, command)) return t->during;
  }
  return State::Failed;
}

}  // namespace

ContextControl::ContextControl(const ContextConfig& context) : context_(context) {}

Result<std::unique_ptr<ContextControl>> ContextControl::create(const ClusterConfig& cluster,
                                                               const ContextConfig& context,
                                                               const AppRegistry& registry,
                                                               EndpointFactory endpoints,
                                                               HostSettings settings) {
  std::unique_ptr<ContextControl> ctl(new ContextControl(context));
  ctl->halt_timeout_ = settings.halt_timeout;
  for (const AppIndex index : context.applications) {
    if (index >= cluster.applications.size()) {
      return Error("context '" + context.name + "': application index " + std::to_string(index) +
                   " is not in the configuration");
    }
    const ApplicationConfig& app = cluster.applications[index];
    const AppType* type = registry.find(app.type);
    if (type == nullptr) {
      std::string known;
      for (const auto& name : registry.names()) known += (known.empty() ? "" : ", ") + name;
      return Error(ErrorCode::not_found, where(app) + application_named(app.id) +
                                             ": unknown type '" + app.type +
                                             "' (known types: " + known + ")");
    }
    std::unique_ptr<Application> instance;
    try {
      instance = type->make();
    } catch (const std::exception& e) {
      return Error(ErrorCode::internal, where(app) + application_named(app.id) + ": creating a '" +
                                            app.type + "' failed: " + e.what());
    }
    if (!instance) {
      return Error(ErrorCode::internal, where(app) + application_named(app.id) + ": type '" +
                                            app.type + "' made no application");
    }
    const std::size_t slot = ctl->hosts_.size();
    ContextControl* self = ctl.get();
    ctl->hosts_.push_back(std::make_unique<AppHost>(
        cluster, app, *type, std::move(instance), endpoints, settings, ctl->state_mutex_,
        [self, slot](const std::string& reason) { self->failure_noted(slot, reason); }));
  }
  for (const auto& h : ctl->hosts_) ctl->enable_order_.push_back(h.get());
  std::stable_sort(ctl->enable_order_.begin(), ctl->enable_order_.end(),
                   [](const AppHost* a, const AppHost* b) { return a->rank() < b->rank(); });
  ctl->thread_ = std::thread([c = ctl.get()] { c->loop(); });
  return ctl;
}

ContextControl::~ContextControl() {
  {
    std::lock_guard lock(queue_mutex_);
    stopping_ = true;
  }
  queue_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  // The hosts go first, while the mutexes they (and a late failure report from an agent thread)
  // use are still alive.
  enable_order_.clear();
  hosts_.clear();
}

AppHost* ContextControl::find(std::string_view id) const {
  for (const auto& h : hosts_) {
    if (h->id() == id) return h.get();
  }
  return nullptr;
}

Error ContextControl::refusal_locked(const AppHost& host, Command command) const {
  std::string from;
  for (const State s : kAllStates) {
    if (transition(s, command)) from += (from.empty() ? "" : " or ") + std::string(to_string(s));
  }
  return Error(ErrorCode::conflict, application_named(host.id()) + " is " +
                                        to_string(host.state_locked()) + ": " + to_string(command) +
                                        " is allowed only from " + from);
}

Result<std::vector<ContextControl::Accepted>> ContextControl::command_all(Command command) {
  std::lock_guard lock(state_mutex_);
  if (closing_) {
    return Error(ErrorCode::conflict, "context '" + context_.name + "' is shutting down");
  }
  for (const AppHost* h : enable_order_) {
    const State s = h->state_locked();
    if (!transition(s, command) && !leaves_alone(s, command)) return refusal_locked(*h, command);
  }
  std::vector<Accepted> answer;
  std::vector<AppHost*> work;
  for (AppHost* h : enable_order_) {
    if (const auto t = h->begin_locked(command)) {
      work.push_back(h);
      answer.push_back({h, t->during});
    } else {
      answer.push_back({h, h->state_locked()});
    }
  }
  // Queued under the state lock so that the queue order is the order of acceptance.
  if (!work.empty()) post([this, work, command] { run(work, command); });
  spdlog::info("context {}: {} accepted for {} application(s)", context_.name, to_string(command),
               work.size());
  return answer;
}

Result<State> ContextControl::command(AppHost& host, Command command) {
  std::lock_guard lock(state_mutex_);
  if (closing_) {
    return Error(ErrorCode::conflict, "context '" + context_.name + "' is shutting down");
  }
  const auto t = host.begin_locked(command);
  if (!t) return refusal_locked(host, command);
  post([this, h = &host, command] { run({h}, command); });
  spdlog::info("{}: {} accepted", host.id(), to_string(command));
  return t->during;
}

std::string ContextControl::state() const {
  std::lock_guard lock(state_mutex_);
  if (hosts_.empty()) return to_string(State::Halted);
  bool mixed = false;
  const State first = hosts_.front()->state_locked();
  for (const auto& h : hosts_) {
    if (h->state_locked() == State::Failed) return to_string(State::Failed);
    mixed = mixed || h->state_locked() != first;
  }
  return mixed ? "Mixed" : to_string(first);
}

std::future<void> ContextControl::close() {
  auto done = std::make_shared<std::promise<void>>();
  auto future = done->get_future();
  std::lock_guard lock(state_mutex_);
  closing_ = true;
  std::vector<AppHost*> running;
  for (AppHost* h : enable_order_) {
    if (h->begin_locked(Command::Halt)) running.push_back(h);
  }
  post([this, running, done] {
    if (!running.empty()) halt(running);
    done->set_value();
  });
  return future;
}

void ContextControl::failure_noted(std::size_t host, const std::string& reason) {
  {
    // Once the destructor began, the hosts are going away: a failure reported by release() at
    // that point is only logged.
    std::lock_guard lock(queue_mutex_);
    if (stopping_) {
      spdlog::warn("context {}: failure reported while closing: {}", context_.name, reason);
      return;
    }
  }
  post([this, host] { hosts_[host]->fail_pending(); });
}

void ContextControl::post(std::function<void()> task) {
  {
    std::lock_guard lock(queue_mutex_);
    // After the destructor began nothing runs any more; a late failure report is moot then.
    if (stopping_) return;
    queue_.push_back(std::move(task));
  }
  queue_cv_.notify_one();
}

void ContextControl::loop() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock lock(queue_mutex_);
      queue_cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    try {
      task();
    } catch (const std::exception& e) {
      spdlog::error("context {}: control task failed: {}", context_.name, e.what());
    }
  }
}

bool ContextControl::still_in(const AppHost& host, Command command) const {
  const State now = host.status().state;
  if (now == during_state(command)) return true;
  if (now == target_state(command)) return false;  // done with another's (join_accepted_halts)
  spdlog::info("{}: {} dropped: the application is {} now", host.id(), to_string(command),
               to_string(now));
  return false;
}

// Each host is checked just before its hook: a failure handled since the command was accepted
// (Failed) voids the rest of its transition.
void ContextControl::run(const std::vector<AppHost*>& hosts, Command command) {
  const auto each = [&](auto first, auto last, void (AppHost::*step)()) {
    for (auto it = first; it != last; ++it) {
      if (still_in(**it, command)) ((**it).*step)();
    }
  };
  switch (command) {
    case Command::Configure:
      each(hosts.begin(), hosts.end(), &AppHost::configure);
      break;
    case Command::Enable:
      each(hosts.begin(), hosts.end(), &AppHost::enable);
      break;
    case Command::Resume:
      each(hosts.begin(), hosts.end(), &AppHost::resume);
      break;
    case Command::Suspend:
      each(hosts.rbegin(), hosts.rend(), &AppHost::suspend);
      break;
    case Command::Halt:
      halt(hosts);
      break;
    case Command::Reset:
      each(hosts.begin(), hosts.end(), &AppHost::reset);
      break;
  }
}

// Halts one rank at a time, highest first. Within a rank every application stops producing,
// then all drain together (they may depend on each other, e.g. RUBU nodes), then all release.
// The controller halts a rank one application at a time: an application of the rank whose Halt
// was accepted meanwhile (its own task waits in the queue) joins the drain at once rather than
// after it (time-slice inputs agree on the run's end only once every one of them halts).
void ContextControl::halt(std::vector<AppHost*> hosts) {
  std::stable_sort(hosts.begin(), hosts.end(),
                   [](const AppHost* a, const AppHost* b) { return a->rank() > b->rank(); });
  auto first = hosts.begin();
  while (first != hosts.end()) {
    const int rank = (*first)->rank();
    const auto last =
        std::find_if(first, hosts.end(), [rank](const AppHost* h) { return h->rank() != rank; });
    std::vector<AppHost*> draining;
    for (auto it = first; it != last; ++it) {
      if (still_in(**it, Command::Halt) && (*it)->halt_begin()) draining.push_back(*it);
    }
    auto deadline = std::chrono::steady_clock::now() + halt_timeout_;
    for (;;) {
      // One that joins has the whole halt timeout from now.
      if (join_accepted_halts(rank, hosts, draining))
        deadline = std::chrono::steady_clock::now() + halt_timeout_;
      bool all_drained = true;
      for (auto it = draining.begin(); it != draining.end();) {
        if ((*it)->failure_noted() && (*it)->fail_pending()) {
          it = draining.erase(it);
          continue;
        }
        all_drained = (*it)->halt_drained() && all_drained;
        ++it;
      }
      if (all_drained) break;
      if (std::chrono::steady_clock::now() >= deadline) {
        fail_undrained(draining);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    for (AppHost* h : draining) h->halt_finish();
    first = last;
  }
}

bool ContextControl::join_accepted_halts(int rank, const std::vector<AppHost*>& asked,
                                         std::vector<AppHost*>& draining) {
  // A Halt accepted for an application of a higher rank (a producer) goes first, in its own
  // task: none of this rank joins before it.
  for (const auto& h : hosts_) {
    if (h->rank() > rank && h->status().state == State::Halting &&
        std::find(asked.begin(), asked.end(), h.get()) == asked.end()) {
      return false;
    }
  }
  bool joined = false;
  for (const auto& h : hosts_) {
    if (h->rank() != rank || h->status().state != State::Halting) continue;
    AppHost* host = h.get();
    if (std::find(draining.begin(), draining.end(), host) != draining.end() ||
        std::find(asked.begin(), asked.end(), host) != asked.end()) {
      continue;  // draining, or this halt's own (begun or dropped above)
    }
    if (host->halt_begin()) {
      draining.push_back(host);
      joined = true;
    }
  }
  return joined;
}

// The applications of `draining` that are not drained fail, each saying what it still had in
// flight (its agent is given a moment to answer) and is taken out of `draining`.
void ContextControl::fail_undrained(std::vector<AppHost*>& draining) {
  std::vector<AppHost*> stuck;
  for (AppHost* h : draining) {
    if (!h->halt_drained()) {
      h->ask_in_flight();
      stuck.push_back(h);
    }
  }
  const auto answer_by = std::chrono::steady_clock::now() + kInFlightAnswerTime;
  while (std::chrono::steady_clock::now() < answer_by &&
         std::any_of(stuck.begin(), stuck.end(),
                     [](const AppHost* h) { return !h->in_flight().has_value(); })) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  for (AppHost* h : stuck) {
    if (h->halt_drained()) continue;  // while it answered
    std::string reason =
        "halt timed out draining after " + std::to_string(halt_timeout_.count()) + " ms";
    if (const std::optional<std::string> left = h->in_flight()) {
      if (!left->empty()) reason += ": " + *left;
    } else {
      reason += " (its agent did not say what it waits for)";
    }
    h->fail_now(reason);
    std::erase(draining, h);
  }
}

}  // namespace daqflow::runtime
