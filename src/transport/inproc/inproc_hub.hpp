#pragma once
// The shared state of the inproc transport: one Hub per Transport object maps application indexes
// to the mailboxes of live endpoints. A message moves from sender to receiver as a Delivery
// pushed into the receiver's bounded MPSC ring; its buffers move with it, nothing is copied.
//
// Ownership, chosen so that no reference cycle can form:
//   endpoint --> its own Mailbox, and the Mailboxes and Links of the peers it sends to
//   Mailbox  --> the Links of the senders attached to it, its own Signal
//   Link     --> the sender's Signal (to wake the sender when messages are consumed)
// A Delivery points at its Link without owning it: the receiver's Mailbox owns the Link for as
// long as deliveries through it can exist.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "daqflow/core/result.hpp"
#include "daqflow/core/rings.hpp"
#include "daqflow/transport/transport.hpp"
#include "transport/detail/fence.hpp"

namespace daqflow::transport::inproc {

enum class Closure : std::uint8_t { open, closed, aborted };

// Wakes an endpoint's thread from wait(). Notifying costs a fence and a load unless the owner
// is actually asleep, so the data path makes no system call while both sides are busy.
class Signal {
 public:
  static Result<std::shared_ptr<Signal>> create();
  explicit Signal(int event_fd) : fd_(event_fd) {}
  ~Signal();
  Signal(const Signal&) = delete;
  Signal& operator=(const Signal&) = delete;

  // Any thread, after publishing a change and issuing a seq_cst fence: wakes the owner if it
  // announced that it sleeps.
  void notify_after_fence() {
    if (sleeping_.load(std::memory_order_relaxed) &&
        sleeping_.exchange(false, std::memory_order_acq_rel)) {
      ring();
    }
  }
  // Any thread, control path: something about a link or a mailbox changed; the owner rescans.
  void notify_change() {
    changes_.fetch_add(1, std::memory_order_acq_rel);
    detail::full_fence();
    notify_after_fence();
  }
  [[nodiscard]] std::uint64_t changes() const { return changes_.load(std::memory_order_acquire); }

  // Owner only: sleeps up to timeout unless has_work(), checked after announcing the sleep, says
  // there is something to do (the announcement and that check pair with notify's fence).
  template <typename HasWork>
  void sleep(std::chrono::microseconds timeout, HasWork&& has_work) {
    sleeping_.store(true, std::memory_order_relaxed);
    detail::full_fence();
    if (!has_work()) block(timeout);
    sleeping_.store(false, std::memory_order_relaxed);
  }

 private:
  void ring();
  void block(std::chrono::microseconds timeout);
  int fd_;
  alignas(core::kCacheLine) std::atomic<bool> sleeping_{false};
  alignas(core::kCacheLine) std::atomic<std::uint64_t> changes_{0};
};

// One sender endpoint's path into one receiver's mailbox.
struct Link {
  Link(AppIndex from, std::shared_ptr<Signal> signal)
      : sender(from), sender_signal(std::move(signal)) {}
  const AppIndex sender;
  const std::shared_ptr<Signal> sender_signal;
  // Messages the receiver has popped; written by the receiver, read by the sender.
  alignas(core::kCacheLine) std::atomic<std::uint64_t> consumed{0};
  // Messages the sender has posted; written by the sender, final once sender_closure is set.
  alignas(core::kCacheLine) std::atomic<std::uint64_t> posted{0};
  std::atomic<Closure> sender_closure{Closure::open};
  // Receiver side, under the mailbox's lock: the link's arrival and the sender's closure have
  // been seen.
  bool announced = false;
  bool noted = false;
  bool touched = false;  // receiver thread only: consumed from in the current poll()
};

struct Delivery {
  Link* link = nullptr;
  std::uint64_t sequence = 0;
  std::uint32_t size = 0;
  Message message;
};

// An endpoint's inbound side, shared with the endpoints that send to it.
class Mailbox {
 public:
  Mailbox(AppIndex owner, std::size_t slots, std::shared_ptr<Signal> signal)
      : owner_(owner), signal_(std::move(signal)), inbound_(slots) {}

  [[nodiscard]] AppIndex owner() const { return owner_; }
  [[nodiscard]] Signal& signal() const { return *signal_; }
  [[nodiscard]] core::MpscRing<Delivery>& inbound() { return inbound_; }
  [[nodiscard]] Closure closure() const { return closure_.load(std::memory_order_acquire); }

  // Any thread: registers a sender and wakes the owner; nullptr once the mailbox is closed.
  std::shared_ptr<Link> attach(AppIndex sender, std::shared_ptr<Signal> sender_signal);
  // Owner: appends the senders attached since the last scan to opened, and the links whose
  // senders closed since the last scan to closed.
  void scan(std::vector<AppIndex>& opened, std::vector<std::shared_ptr<Link>>& closed);
  // Owner: forgets a link once every delivery through it has been consumed.
  void detach(const Link* link);
  // Owner: closes the mailbox; returns the attached links so that their senders can be told.
  std::vector<std::shared_ptr<Link>> close(Closure how);
  // Any thread: drops every queued delivery (safe while others drain too). If one of them is
  // (link, sequence), its message is moved to reclaimed and true is returned.
  bool drain(const Link* link = nullptr, std::uint64_t sequence = 0, Message* reclaimed = nullptr);

 private:
  const AppIndex owner_;
  const std::shared_ptr<Signal> signal_;
  core::MpscRing<Delivery> inbound_;
  std::atomic<Closure> closure_{Closure::open};
  std::mutex mutex_;  // guards links_; control path only
  std::vector<std::shared_ptr<Link>> links_;
};

// The index of live mailboxes. Thread-safe; used on the control path only.
class Hub {
 public:
  explicit Hub(std::size_t applications) : mailboxes_(applications) {}

  [[nodiscard]] std::size_t applications() const { return mailboxes_.size(); }
  Result<void> publish(const std::shared_ptr<Mailbox>& mailbox);
  void withdraw(const Mailbox& mailbox);
  [[nodiscard]] std::shared_ptr<Mailbox> find(AppIndex index);
  // Changes whenever an endpoint appears; lets waiting senders skip the lock otherwise.
  [[nodiscard]] std::uint64_t generation() const {
    return generation_.load(std::memory_order_acquire);
  }

 private:
  std::mutex mutex_;
  std::vector<std::shared_ptr<Mailbox>> mailboxes_;
  std::atomic<std::uint64_t> generation_{0};
};

}  // namespace daqflow::transport::inproc
