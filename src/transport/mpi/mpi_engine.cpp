#include "mpi_engine.hpp"

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>

#include "mpi_api.hpp"
#include "mpi_domain.hpp"

namespace daqflow::transport::mpi {
namespace {

// Idle passes before the engine yields the CPU, and before it sleeps.
constexpr int kSpinPasses = 200;
constexpr int kYieldPasses = 2000;
// The longest sleep while requests are in flight (MPI makes progress only when called), and
// while nothing is (messages from other ranks are noticed this late at worst).
constexpr std::chrono::microseconds kBusySleep{20};
constexpr std::chrono::microseconds kIdleSleep{1000};

}  // namespace

Engine& Engine::instance() {
  static Engine engine;
  return engine;
}

Engine::Engine() : thread_([this] { run(); }) {}

Engine::~Engine() {
  stop_.store(true, std::memory_order_release);
  detail::full_fence();
  bell_.ring();
  if (thread_.joinable()) thread_.join();
}

void Engine::post(std::function<void()> command) {
  {
    std::lock_guard lock(mutex_);
    commands_.push_back(std::move(command));
  }
  command_pending_.store(true, std::memory_order_release);
  detail::full_fence();
  bell_.ring();
}

void Engine::call(const std::function<void()>& command) {
  std::mutex done_mutex;
  std::condition_variable done_cv;
  bool done = false;
  post([&] {
    command();
    std::lock_guard lock(done_mutex);
    done = true;
    done_cv.notify_one();
  });
  std::unique_lock lock(done_mutex);
  done_cv.wait(lock, [&] { return done; });
}

void Engine::add(std::shared_ptr<Domain> domain) {
  post([this, domain = std::move(domain)]() mutable {
    if (!failure().empty()) return;
    if (auto opened = domain->open(); !opened) {
      std::lock_guard lock(mutex_);
      failure_ = opened.error().message();
      return;
    }
    domains_.push_back(std::move(domain));
  });
}

void Engine::remove(const std::shared_ptr<Domain>& domain) {
  call([&] {
    domain->shut();
    std::erase(domains_, domain);
  });
}

std::string Engine::failure() const {
  std::lock_guard lock(mutex_);
  return failure_;
}

bool Engine::has_commands() {
  return command_pending_.load(std::memory_order_acquire) || stop_.load(std::memory_order_acquire);
}

void Engine::run_commands() {
  std::vector<std::function<void()>> batch;
  {
    std::lock_guard lock(mutex_);
    batch.swap(commands_);
    command_pending_.store(false, std::memory_order_relaxed);
  }
  for (auto& command : batch) command();
}

void Engine::run() {
  int provided = 0;
  const int status = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  if (status != MPI_SUCCESS) {
    std::lock_guard lock(mutex_);
    failure_ = "MPI_Init_thread failed with code " + std::to_string(status);
  } else {
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  }
  int idle = 0;
  while (!stop_.load(std::memory_order_acquire)) {
    if (command_pending_.load(std::memory_order_acquire)) run_commands();
    std::size_t work = 0;
    bool busy = false;
    for (const auto& domain : domains_) {
      work += domain->progress();
      busy = busy || domain->busy();
    }
    if (work > 0) {
      idle = 0;
      continue;
    }
    ++idle;
    if (idle < kSpinPasses) continue;
    if (idle < kYieldPasses) {
      std::this_thread::yield();
      continue;
    }
    bell_.sleep(busy ? kBusySleep : kIdleSleep, [this] {
      return has_commands() || std::any_of(domains_.begin(), domains_.end(),
                                           [](const auto& d) { return d->has_work(); });
    });
  }
  run_commands();
  for (const auto& domain : domains_) domain->shut();
  domains_.clear();
  if (status == MPI_SUCCESS) MPI_Finalize();
}

}  // namespace daqflow::transport::mpi
