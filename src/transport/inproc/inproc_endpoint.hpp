#pragma once
// The inproc endpoint: pointer hand-off between applications of one process (see inproc_hub.hpp).
//
// Back-pressure: per peer at most pipeline_depth messages may be posted and not yet reported by
// a send_done; a message counts as sent once the receiver has popped it from its ring, and
// post_send also answers back_pressure when the receiver's ring is full. The data path takes no
// lock and makes no system call unless the other side sleeps in wait().
//
// Wake-ups are batched: a receiver asleep in wait() is woken by the sender's next poll() or
// wait() after the post (the agent loop calls one of them right away), and a sender asleep is
// woken at the end of the receiver's poll() that consumed its messages.

#include <memory>
#include <vector>

#include "daqflow/transport/fault.hpp"
#include "daqflow/transport/transport.hpp"
#include "inproc_hub.hpp"
#include "transport/detail/event_queue.hpp"
#include "transport/detail/stats_counters.hpp"

namespace daqflow::transport::inproc {

class InprocEndpoint final : public Endpoint, public FaultInjection {
 public:
  // addresses (for messages) must outlive the endpoint, as the transport's contract says.
  InprocEndpoint(const AddressTable& addresses, std::shared_ptr<Hub> hub,
                 const EndpointOptions& options, std::shared_ptr<Signal> signal,
                 std::shared_ptr<Mailbox> mailbox);
  ~InprocEndpoint() override;
  InprocEndpoint(const InprocEndpoint&) = delete;
  InprocEndpoint& operator=(const InprocEndpoint&) = delete;

  [[nodiscard]] AppIndex self() const override { return options_.self; }
  Result<void> connect(AppIndex peer) override;
  [[nodiscard]] bool connected(AppIndex peer) const override;
  [[nodiscard]] SendStatus post_send(AppIndex peer, Message& message) override;
  [[nodiscard]] std::size_t poll(std::span<Completion> out) override;
  void wait(std::chrono::microseconds timeout) override;
  [[nodiscard]] std::size_t in_flight(AppIndex peer) const override;
  void close(std::chrono::milliseconds timeout) override;
  [[nodiscard]] EndpointStats stats() const override { return stats_.snapshot(nullptr); }
  [[nodiscard]] std::vector<PeerStats> peer_stats() const override {
    return stats_.peer_snapshot();
  }
  void abort() override { shut(Closure::aborted); }

 private:
  struct SentInfo {
    std::uint64_t sequence = 0;
    std::uint64_t tag = 0;
    std::uint32_t size = 0;
    wire::MessageType type = wire::MessageType::data;
  };
  struct Peer {
    enum class State : std::uint8_t { idle, open, closed };
    State state = State::idle;
    bool waiting = false;   // connect() was called and the peer has no endpoint yet
    bool busy = false;      // in busy_: has sends not yet reported
    bool linked = false;    // in linked_: has a mailbox and a link
    bool reported = false;  // its closure has been reported
    bool doorbell = false;  // in doorbells_: posted to since the last wake-up check
    Closure closure = Closure::open;
    std::uint32_t draining = 0;  // its closed links whose deliveries are not all consumed yet
    std::uint64_t tried_generation = ~std::uint64_t{0};
    std::shared_ptr<Mailbox> mailbox;
    std::shared_ptr<Link> link;
    std::uint64_t posted = 0;          // sends posted; the next sequence number
    std::uint64_t reported_sends = 0;  // send_done completions produced
    std::vector<SentInfo> sent;        // ring of pipeline_depth entries, by sequence
  };

  bool resolve(AppIndex index);
  void note_changes(detail::Emitter& emit);
  void report_closure(AppIndex index, detail::Emitter& emit);
  void drop_sends(Peer& peer, AppIndex index);
  void finish_closing_links(detail::Emitter& emit);
  [[nodiscard]] bool has_work() const;
  void ring_doorbells();
  void shut(Closure how);

  const AddressTable& addresses_;
  std::shared_ptr<Hub> hub_;
  EndpointOptions options_;
  std::shared_ptr<Signal> signal_;
  std::shared_ptr<Mailbox> own_;
  std::vector<Peer> peers_;
  std::vector<AppIndex> busy_;
  std::vector<AppIndex> linked_;
  std::vector<AppIndex> waiting_;
  std::vector<AppIndex> doorbells_;  // peers posted to since the last wake-up check
  std::vector<Link*> touched_;       // links consumed from in this poll()
  std::vector<AppIndex> opened_scratch_;
  std::vector<AppIndex> closed_scratch_;
  std::vector<std::shared_ptr<Link>> closing_;  // senders' links: closed, deliveries pending
  detail::EventQueue events_;
  detail::StatsCounters stats_;
  std::uint64_t seen_changes_ = ~std::uint64_t{0};
  std::uint64_t seen_generation_ = ~std::uint64_t{0};
  bool closed_ = false;
};

}  // namespace daqflow::transport::inproc
