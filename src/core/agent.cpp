#include "daqflow/core/agent.hpp"

#include <pthread.h>
#include <sched.h>

#include <cstring>

#include "daqflow/core/enum_names.hpp"
#include "daqflow/core/log.hpp"

namespace daqflow::core {

void Agent::wait_for_work(std::chrono::microseconds timeout) {
  std::this_thread::sleep_for(timeout);
}

namespace {

constexpr auto kIdleNames = enum_names<IdleKind>({{IdleKind::spin, "spin"},
                                                  {IdleKind::yield, "yield"},
                                                  {IdleKind::backoff, "backoff"},
                                                  {IdleKind::block, "block"}});

}  // namespace

Result<IdleKind> parse_idle_kind(const std::string& name) {
  if (const auto kind = kIdleNames.parse(name)) return *kind;
  return Error("unknown idle strategy '" + name + "' (expected " + kIdleNames.list() + ")");
}

const char* to_string(IdleKind kind) {
  return kIdleNames.name(kind);
}

void IdleStrategy::idle(Agent& agent, int work_count) {
  if (work_count > 0) {
    idle_rounds_ = 0;
    return;
  }
  ++idle_rounds_;
  switch (kind_) {
    case IdleKind::spin:
      __builtin_ia32_pause();
      break;
    case IdleKind::yield:
      std::this_thread::yield();
      break;
    case IdleKind::backoff:
      // Spin briefly, then yield, then block with a growing timeout: cheap when busy, quiet
      // when idle.
      if (idle_rounds_ <= kSpinRounds) {
        __builtin_ia32_pause();
      } else if (idle_rounds_ <= kSpinRounds + kYieldRounds) {
        std::this_thread::yield();
      } else {
        const auto shift = std::min<std::uint32_t>(idle_rounds_ - kSpinRounds - kYieldRounds, 10);
        const auto t = std::min(max_block_, std::chrono::microseconds(std::int64_t{1} << shift));
        agent.wait_for_work(t);
      }
      break;
    case IdleKind::block:
      agent.wait_for_work(max_block_);
      break;
  }
}

AgentRunner::AgentRunner(Agent& agent, AgentOptions options) : agent_(agent), options_(options) {}

AgentRunner::~AgentRunner() {
  stop();
}

Result<void> AgentRunner::start() {
  if (thread_.joinable())
    return Error(ErrorCode::conflict, "agent '" + agent_.agent_name() + "' already started");
  stop_requested_.store(false, std::memory_order_release);
  running_.store(true, std::memory_order_release);
  thread_ = std::thread([this] { loop(); });
  if (options_.cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(*options_.cpu, &set);
    const int rc = pthread_setaffinity_np(thread_.native_handle(), sizeof(set), &set);
    if (rc != 0) {
      spdlog::warn("agent '{}': cannot pin to CPU {}: {}", agent_.agent_name(), *options_.cpu,
                   std::strerror(rc));
    }
  }
  return ok();
}

void AgentRunner::stop() {
  stop_requested_.store(true, std::memory_order_release);
  if (thread_.joinable()) thread_.join();
  running_.store(false, std::memory_order_release);
}

void AgentRunner::loop() {
  const std::string name = agent_.agent_name().substr(0, 15);
  pthread_setname_np(pthread_self(), name.c_str());
  IdleStrategy idle(options_.idle);
  agent_.on_start();
  while (!stop_requested_.load(std::memory_order_acquire)) {
    idle.idle(agent_, agent_.do_work());
  }
  agent_.on_close();
  running_.store(false, std::memory_order_release);
}

}  // namespace daqflow::core
