#include "daqflow/control/lease.hpp"

namespace daqflow::control {

LeaseKeeper::LeaseKeeper(std::vector<ControlClient> clients, std::chrono::milliseconds period)
    : period_(period) {
  for (auto& c : clients) add(std::move(c));
}

void LeaseKeeper::add(ControlClient client) {
  threads_.emplace_back([this, c = std::move(client)] { loop(c); });
}

LeaseKeeper::~LeaseKeeper() {
  {
    std::lock_guard lock(mutex_);
    done_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void LeaseKeeper::loop(const ControlClient& client) {
  std::unique_lock lock(mutex_);
  while (!done_) {
    lock.unlock();
    const auto answer = client.post("/api/v1/lease");
    if (answer && answer->is_object() && answer->contains("run") && (*answer)["run"].is_object() &&
        (*answer)["run"].value("stop_requested", false)) {
      stop_.store(true, std::memory_order_relaxed);
    }
    lock.lock();
    cv_.wait_for(lock, period_, [this] { return done_; });
  }
}

}  // namespace daqflow::control
