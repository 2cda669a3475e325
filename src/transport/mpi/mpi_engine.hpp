#pragma once
// The MPI engine: the one thread per process that calls MPI (mpila's transport thread).
//
// It starts with the first mpi transport, initialises MPI (MPI_THREAD_FUNNELED: only this thread
// ever calls MPI) and stays until the process exits, when it finalises MPI; transports come and go
// in between as Domains. Everything else talks to it through commands (control path) and the
// channels of the endpoints (data path).
//
// MPI_Init under mpirun waits for every rank, so nothing here waits for it on a caller's behalf:
// commands queue up and run once MPI is ready.

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "mpi_channel.hpp"

namespace daqflow::transport::mpi {

class Domain;

class Engine {
 public:
  // The process's engine, started on first use.
  static Engine& instance();
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Runs command on the engine thread (once MPI is initialised) without waiting for it.
  void post(std::function<void()> command);
  // Runs command on the engine thread and waits for it to finish.
  void call(const std::function<void()>& command);
  // Adds a domain (the engine progresses it from then on) / removes it, shutting it down.
  void add(std::shared_ptr<Domain> domain);
  void remove(const std::shared_ptr<Domain>& domain);
  // After publishing work and a full fence: wakes the engine if it sleeps.
  void wake() { bell_.ring(); }
  // Why MPI could not be initialised; empty while it is fine (or not yet started).
  [[nodiscard]] std::string failure() const;

 private:
  Engine();
  void run();
  void run_commands();
  bool has_commands();

  mutable std::mutex mutex_;
  std::vector<std::function<void()>> commands_;  // guarded by mutex_
  std::string failure_;                          // guarded by mutex_
  std::atomic<bool> command_pending_{false};
  std::atomic<bool> stop_{false};
  Doorbell bell_;
  std::vector<std::shared_ptr<Domain>> domains_;  // engine thread only
  std::thread thread_;
};

}  // namespace daqflow::transport::mpi
