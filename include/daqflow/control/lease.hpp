#pragma once
// The leases of executives started elsewhere: each is told, every `period`, that its controller is
// attached (POST /api/v1/lease), and the answer says whether `daqflow stop` asked for the end of
// the run. A thread per executive: the run's loop may wait on a slow answer, the leases must not,
// and no executive's renewal waits on another's slow answer (a configure on a loaded host holds
// an answer for seconds, longer than a short lease).

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "daqflow/control/client.hpp"

namespace daqflow::control {

class LeaseKeeper {
 public:
  LeaseKeeper(std::vector<ControlClient> clients, std::chrono::milliseconds period);
  ~LeaseKeeper();
  // Renews one more executive's lease from now on (its own thread). Owner thread only.
  void add(ControlClient client);
  LeaseKeeper(const LeaseKeeper&) = delete;
  LeaseKeeper& operator=(const LeaseKeeper&) = delete;

  // An executive answered that `daqflow stop` asked for the end of the run.
  [[nodiscard]] bool stop_requested() const { return stop_.load(std::memory_order_relaxed); }

 private:
  void loop(const ControlClient& client);

  std::chrono::milliseconds period_;
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;                 // guarded by mutex_
  std::vector<std::thread> threads_;  // last: they use the members above
};

}  // namespace daqflow::control
