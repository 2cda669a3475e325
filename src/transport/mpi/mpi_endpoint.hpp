#pragma once
// The mpi endpoint: the application's side of one queue pair with the MPI engine.
//
// post_send() checks the message, counts it against the peer's pipeline depth and pushes it to the
// engine; poll() turns the engine's events into completions. Neither calls MPI, locks or
// allocates. A peer is connected once it answered our hello (or said hello to us), closed once it
// said bye, and failed once it aborted; sends to it are refused from then on and those in flight
// are forgotten (their buffers come back when MPI is done with them).

#include <memory>
#include <string>
#include <vector>

#include "daqflow/transport/fault.hpp"
#include "daqflow/transport/transport.hpp"
#include "mpi_channel.hpp"
#include "transport/detail/stats_counters.hpp"

namespace daqflow::transport::mpi {

// What the endpoints of one transport share with it: which applications have an endpoint.
struct Registry {
  std::mutex mutex;
  std::vector<bool> live;  // guarded by mutex
};

class MpiEndpoint final : public Endpoint, public FaultInjection {
 public:
  // addresses (for messages) must outlive the endpoint, as the transport's contract says.
  MpiEndpoint(const AddressTable& addresses, std::shared_ptr<Registry> registry,
              std::shared_ptr<Channel> channel, std::shared_ptr<const std::vector<int>> rank_of,
              std::string name);
  ~MpiEndpoint() override;
  MpiEndpoint(const MpiEndpoint&) = delete;
  MpiEndpoint& operator=(const MpiEndpoint&) = delete;

  [[nodiscard]] AppIndex self() const override { return channel_->options.self; }
  Result<void> connect(AppIndex peer) override;
  [[nodiscard]] bool connected(AppIndex peer) const override;
  [[nodiscard]] SendStatus post_send(AppIndex peer, Message& message) override;
  [[nodiscard]] std::size_t poll(std::span<Completion> out) override;
  void wait(std::chrono::microseconds timeout) override;
  [[nodiscard]] std::size_t in_flight(AppIndex peer) const override;
  void close(std::chrono::milliseconds timeout) override;
  [[nodiscard]] EndpointStats stats() const override;
  [[nodiscard]] std::vector<PeerStats> peer_stats() const override {
    return stats_.peer_snapshot();
  }
  void abort() override;

 private:
  struct Peer {
    enum class State : std::uint8_t { idle, connecting, open, closed };
    State state = State::idle;
    std::uint32_t epoch = 0;
    std::uint64_t posted = 0;
    std::uint64_t reported = 0;
  };

  bool handle(Event& event, Completion& out);
  void lose(Peer& peer);
  void shut(Work::Kind how, std::chrono::milliseconds timeout);
  void await_release(std::int64_t deadline_ns);
  void push_work(Work&& work);

  const AddressTable& addresses_;
  std::shared_ptr<Registry> registry_;
  std::shared_ptr<Channel> channel_;
  std::shared_ptr<const std::vector<int>> rank_of_;
  std::string name_;  // "mpi endpoint of application 'ru1'"
  std::vector<Peer> peers_;
  detail::StatsCounters stats_;
  bool closed_ = false;
};

}  // namespace daqflow::transport::mpi
