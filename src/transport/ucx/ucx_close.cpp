// Closing the ucx endpoint: goodbyes, then the connections, the listener and the worker.

#include <algorithm>

#include "daqflow/core/clock.hpp"
#include "ucx_endpoint.hpp"

namespace daqflow::transport::ucx {
namespace {

// How long closing waits for UCX to finish closing connections after the goodbyes.
constexpr std::int64_t kTeardownNs = 100'000'000;

bool sends_pending(const std::vector<SendSlot>& slots, std::size_t head, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) {
    if (!slots[(head + i) % slots.size()].done) return true;
  }
  return false;
}

}  // namespace

void UcxEndpoint::close(std::chrono::milliseconds timeout) {
  stop_caretaker();
  std::lock_guard lock(mutex_);
  shut_down(true, timeout);
}

void UcxEndpoint::abort() {
  stop_caretaker();
  std::lock_guard lock(mutex_);
  shut_down(false, std::chrono::milliseconds(0));
}

bool UcxEndpoint::goodbyes_done() const {
  for (const Peer& p : peers_) {
    if (!p.bye_sent || p.state == Peer::State::failed) continue;
    if (p.bye_request != nullptr || !p.bye_received) return false;
    if (sends_pending(p.slots, p.head, p.count)) return false;
  }
  return true;
}

void UcxEndpoint::shut_down(bool orderly, std::chrono::milliseconds timeout) {
  if (closed_) return;
  closing_ = true;
  const std::int64_t deadline =
      core::monotonic_ns() + std::chrono::duration_cast<std::chrono::nanoseconds>(timeout).count();
  if (worker_ != nullptr) {
    // Senders waiting for us to take their rendezvous data may go on (and close) now.
    release_arrivals();
    if (orderly && started_) {
      // The bye follows every message posted to the peer: UCX keeps a connection's order.
      for (AppIndex index = 0; index < peers_.size(); ++index) {
        Peer& p = peers_[index];
        if (p.state == Peer::State::open && p.send != nullptr) send_bye(index, p.send->ep);
      }
      for (;;) {
        while (ucp_worker_progress(worker_) != 0) {
        }
        accept_pending();
        if (!replies_.empty()) send_replies();
        if (!failed_.empty()) apply_failures();
        if (goodbyes_done()) break;
        const std::int64_t left = deadline - core::monotonic_ns();
        if (left <= 0) break;
        sleep_on_worker(std::chrono::microseconds(std::min<std::int64_t>(left / 1000 + 1, 10'000)));
      }
    }
    accept_pending();  // (rejects)
    if (listener_ != nullptr) ucp_listener_destroy(std::exchange(listener_, nullptr));
    failed_.clear();
    for (auto& c : connections_) close_connection(*c);
    reap();
    const std::int64_t teardown_end = core::monotonic_ns() + kTeardownNs;
    while (!connections_.empty() && core::monotonic_ns() < teardown_end) {
      ucp_worker_progress(worker_);
      reap();
    }
    ucp_worker_destroy(std::exchange(worker_, nullptr));
  }
  connections_.clear();
  requests_.clear();
  welcomes_.clear();
  dialing_.clear();
  for (Peer& p : peers_) {
    clear_sends(p);
    p.send = nullptr;
    p.dial = nullptr;
    p.listed = false;
    p.bye_request = nullptr;
    if (p.state != Peer::State::idle) p.state = Peer::State::closed;
  }
  while (!arrivals_.empty()) arrivals_.pop();
  waiting_ = 0;
  receiving_ = 0;
  stalled_ = false;
  done_.clear();
  retries_.clear();
  replies_.clear();
  events_.clear();
  stats_.peers_connected.store(0, std::memory_order_relaxed);
  closed_ = true;
}

}  // namespace daqflow::transport::ucx
