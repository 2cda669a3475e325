#include "daqflow/core/agent.hpp"

#include <pthread.h>
#include <sched.h>

#include <cstring>

#include "daqflow/core/clock.hpp"
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
    reset();
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
      backoff(agent);
      break;
    case IdleKind::block:
      agent.wait_for_work(max_block_);
      break;
  }
}

std::int64_t IdleStrategy::timed_yield() {
  const std::int64_t before = monotonic_ns();
  std::this_thread::yield();
  return monotonic_ns() - before;
}

// Spins while the CPU is this thread's alone, then yields, and blocks once yielding only spins.
// A yield that lasted let another thread run: on a host with more busy threads than CPUs,
// spinning (or blocking, whose wake-up preempts a thread at work) takes the CPU from threads
// with work, so the thread goes on yielding while others use the CPU, for up to kYieldNs of
// their time, and spins no more until a quick yield says the CPU is free again.
void IdleStrategy::backoff(Agent& agent) {
  if (!contended_ && idle_rounds_ <= kSpinRounds) {
    __builtin_ia32_pause();
    return;
  }
  if (quiet_yields_ < kYieldRounds) {
    const std::int64_t took = yield_();
    contended_ = took >= kOtherRanNs;
    yielded_ns_ += took;
    if (!contended_ || yielded_ns_ >= kYieldNs) ++quiet_yields_;
    return;
  }
  // Blocks with a timeout that grows to about a millisecond.
  const auto shift = std::min<std::uint32_t>(++blocks_, 10);
  agent.wait_for_work(std::min(max_block_, std::chrono::microseconds(std::int64_t{1} << shift)));
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
