// The fault-injecting wrapper (include/daqflow/transport/fault.hpp): an endpoint around any
// other that delays, cuts or stalls the links the configuration names and corrupts one message.
//
// Sending side (delay, cut, corrupt, reset): a message posted while its link is delayed or cut, or
// while earlier ones to the same peer are still held, waits here in order and goes to the inner
// endpoint from poll() once it is due and the link is not cut. Receiving side (stall): what the
// inner endpoint delivers from a stalled peer waits here, in order, until the stall ends; the
// receive buffers it holds are what back-pressures the sender, as with a process that stopped
// reading.

#include <algorithm>
#include <deque>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "daqflow/core/clock.hpp"
#include "daqflow/transport/fault.hpp"

namespace daqflow::transport {
namespace {

constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::max();

std::int64_t ns(std::chrono::milliseconds ms) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(ms).count();
}

// A rule in effect at this endpoint and how far it has got.
struct Fault {
  FaultRule rule;
  std::uint64_t messages = 0;  // messages that crossed the link here
  std::int64_t first_ns = -1;  // when the first did
  std::int64_t start_ns = -1;  // when the fault began; -1: not yet
  bool corrupted = false;      // corrupt: the one message has gone
  bool reset = false;          // reset: the link has been reset

  // Starts the fault when its trigger has come; call before counting a message.
  void check_start(std::int64_t now) {
    if (start_ns >= 0 || messages < rule.after_messages) return;
    if (rule.after.count() > 0 && (first_ns < 0 || now - first_ns < ns(rule.after))) return;
    start_ns = now;
  }
  void count(std::int64_t now) {
    if (first_ns < 0) first_ns = now;
    ++messages;
  }
  [[nodiscard]] std::int64_t end_ns() const {
    return start_ns < 0 || rule.duration.count() == 0 ? kNever : start_ns + ns(rule.duration);
  }
  [[nodiscard]] bool active(std::int64_t now) const { return start_ns >= 0 && now < end_ns(); }
};

class FaultEndpoint final : public Endpoint, public FaultInjection {
 public:
  FaultEndpoint(std::unique_ptr<Endpoint> inner, const EndpointOptions& options,
                std::vector<Fault> faults)
      : inner_(std::move(inner)),
        inner_faults_(fault_injection(*inner_)),
        depth_(options.pipeline_depth),
        faults_(std::move(faults)) {}
  ~FaultEndpoint() override { FaultEndpoint::close(std::chrono::milliseconds(0)); }

  [[nodiscard]] AppIndex self() const override { return inner_->self(); }
  Result<void> connect(AppIndex peer) override { return inner_->connect(peer); }
  [[nodiscard]] bool connected(AppIndex peer) const override { return inner_->connected(peer); }

  [[nodiscard]] SendStatus post_send(AppIndex peer, Message& message) override {
    const std::int64_t now = core::monotonic_ns();
    std::int64_t due = now;
    bool corrupt = false;
    bool touched = false;  // a sending fault on this link
    for (Fault& f : faults_) {
      if (f.rule.kind == FaultRule::Kind::stall || f.rule.to != peer) continue;
      touched = true;
      f.check_start(now);
      if (f.rule.kind == FaultRule::Kind::delay && f.active(now)) {
        due = std::max(due, now + ns(f.rule.delay));
      } else if (f.rule.kind == FaultRule::Kind::corrupt && f.active(now) && !f.corrupted) {
        corrupt = true;
      }
    }
    std::deque<Held>* held = touched ? &outgoing(peer) : nullptr;
    if (held == nullptr || (held->empty() && due == now && !cut(peer, now))) {
      if (corrupt) inner_faults_->corrupt_next(peer);
      const SendStatus s = inner_->post_send(peer, message);
      if (s == SendStatus::ok && touched) counted(peer, now, corrupt);
      return s;
    }
    if (held->size() + inner_->in_flight(peer) >= depth_) return SendStatus::back_pressure;
    held->push_back(Held{std::move(message), due, corrupt});
    message.clear();
    counted(peer, now, corrupt);
    return SendStatus::ok;
  }

  [[nodiscard]] std::size_t poll(std::span<Completion> out) override {
    const std::int64_t now = core::monotonic_ns();
    reset_due(now);
    release_outgoing(now);
    std::size_t n = release_incoming(out, now);
    if (n == out.size()) return n;
    const std::size_t end = n + inner_->poll(out.subspan(n));
    // What came from a stalled peer, or from one whose earlier completions are still held here,
    // waits; the rest moves up in place.
    for (std::size_t i = n; i < end; ++i) {
      Completion& c = out[i];
      std::deque<Completion>* held =
          c.kind == Completion::Kind::send_done ? nullptr : stalled_from(c, now);
      if (held != nullptr) {
        held->push_back(std::move(c));
        continue;
      }
      if (i != n) out[n] = std::move(c);
      ++n;
    }
    return n;
  }

  void wait(std::chrono::microseconds timeout) override {
    const std::int64_t now = core::monotonic_ns();
    const std::int64_t next = next_release(now);
    if (next <= now) return;
    if (next != kNever) {
      timeout = std::min(timeout, std::chrono::duration_cast<std::chrono::microseconds>(
                                      std::chrono::nanoseconds(next - now)) +
                                      std::chrono::microseconds(1));
    }
    inner_->wait(timeout);
  }

  [[nodiscard]] std::size_t in_flight(AppIndex peer) const override {
    const auto held = outgoing_.find(peer);
    return inner_->in_flight(peer) + (held == outgoing_.end() ? 0 : held->second.size());
  }

  // What is still held goes with the connection: the link was cut, delayed or stalled when the
  // endpoint closed.
  void close(std::chrono::milliseconds timeout) override {
    outgoing_.clear();
    incoming_.clear();
    inner_->close(timeout);
  }
  [[nodiscard]] EndpointStats stats() const override { return inner_->stats(); }
  [[nodiscard]] std::vector<PeerStats> peer_stats() const override { return inner_->peer_stats(); }
  [[nodiscard]] Result<std::unique_ptr<core::BufferPool>> make_send_pool(
      std::string name, std::size_t buffer_size, std::size_t count) override {
    return inner_->make_send_pool(std::move(name), buffer_size, count);
  }

  void abort() override {
    outgoing_.clear();
    incoming_.clear();
    if (inner_faults_ != nullptr) inner_faults_->abort();
  }
  void corrupt_next(AppIndex peer) override {
    if (inner_faults_ != nullptr) inner_faults_->corrupt_next(peer);
  }
  void reset_link(AppIndex peer) override {
    if (inner_faults_ != nullptr) inner_faults_->reset_link(peer);
  }
  [[nodiscard]] bool can_reset() const override {
    return inner_faults_ != nullptr && inner_faults_->can_reset();
  }
  [[nodiscard]] bool can_corrupt() const override {
    return inner_faults_ != nullptr && inner_faults_->can_corrupt();
  }

 private:
  struct Held {
    Message message;
    std::int64_t due_ns = 0;
    bool corrupt = false;
  };

  std::deque<Held>& outgoing(AppIndex peer) { return outgoing_[peer]; }

  // Resets each link whose reset rule has started, once: after_messages is counted where
  // messages are posted (the next one starts it, and goes with the reset), after_ms here, from
  // the link's first message. What
  // the wrapper still holds for that link goes with it, as what was in flight does.
  void reset_due(std::int64_t now) {
    for (Fault& f : faults_) {
      if (f.rule.kind != FaultRule::Kind::reset || f.reset) continue;
      // (Never before the link's first message: a connection still being made is not reset.)
      if (f.rule.after_messages == 0 && f.first_ns >= 0) f.check_start(now);
      if (!f.active(now)) continue;
      f.reset = true;
      outgoing_.erase(f.rule.to);
      inner_faults_->reset_link(f.rule.to);
    }
  }

  void counted(AppIndex peer, std::int64_t now, bool corrupt) {
    for (Fault& f : faults_) {
      if (f.rule.kind == FaultRule::Kind::stall || f.rule.to != peer) continue;
      f.count(now);
      if (corrupt && f.rule.kind == FaultRule::Kind::corrupt) f.corrupted = true;
    }
  }

  [[nodiscard]] bool cut(AppIndex peer, std::int64_t now) {
    for (Fault& f : faults_) {
      if (f.rule.kind != FaultRule::Kind::cut || f.rule.to != peer) continue;
      f.check_start(now);
      if (f.active(now)) return true;
    }
    return false;
  }

  // Hands the inner endpoint what is due on links not cut, in order, as far as it takes them.
  void release_outgoing(std::int64_t now) {
    refused_.clear();
    for (auto& [peer, held] : outgoing_) {
      while (!held.empty() && held.front().due_ns <= now && !cut(peer, now)) {
        Held& h = held.front();
        if (h.corrupt) inner_faults_->corrupt_next(peer);
        const SendStatus s = inner_->post_send(peer, h.message);
        if (s == SendStatus::back_pressure || s == SendStatus::not_connected) {
          refused_.push_back(peer);  // the inner endpoint's wait() wakes when it has room
          break;
        }
        // ok, or the peer is gone (closed): the inner endpoint reports that as an error.
        held.pop_front();
      }
    }
  }

  // The queue a completion from a stalled peer waits in, or nullptr when it passes.
  std::deque<Completion>* stalled_from(const Completion& c, std::int64_t now) {
    bool stalled = false;
    bool touched = false;
    for (Fault& f : faults_) {
      if (f.rule.kind != FaultRule::Kind::stall || f.rule.from != c.peer) continue;
      touched = true;
      if (c.kind == Completion::Kind::recv) {
        f.check_start(now);
        stalled |= f.active(now);
        f.count(now);
      } else {
        stalled |= f.active(now);
      }
    }
    if (!touched) return nullptr;
    if (stalled) return &incoming_[c.peer];
    const auto held = incoming_.find(c.peer);
    return held != incoming_.end() && !held->second.empty() ? &held->second : nullptr;
  }

  [[nodiscard]] bool stalled(AppIndex from, std::int64_t now) const {
    return std::any_of(faults_.begin(), faults_.end(), [&](const Fault& f) {
      return f.rule.kind == FaultRule::Kind::stall && f.rule.from == from && f.active(now);
    });
  }

  std::size_t release_incoming(std::span<Completion> out, std::int64_t now) {
    std::size_t n = 0;
    for (auto& [from, held] : incoming_) {
      if (stalled(from, now)) continue;
      while (!held.empty() && n < out.size()) {
        out[n++] = std::move(held.front());
        held.pop_front();
      }
    }
    return n;
  }

  // When something held may next be released: now, a time, or kNever.
  [[nodiscard]] std::int64_t next_release(std::int64_t now) const {
    std::int64_t next = kNever;
    for (const auto& [peer, held] : outgoing_) {
      if (held.empty() || std::find(refused_.begin(), refused_.end(), peer) != refused_.end()) {
        continue;
      }
      std::int64_t at = std::max(held.front().due_ns, now);
      for (const Fault& f : faults_) {
        if (f.rule.kind == FaultRule::Kind::cut && f.rule.to == peer && f.active(now)) {
          at = std::max(at, f.end_ns());
        }
      }
      next = std::min(next, at);
    }
    for (const auto& [from, held] : incoming_) {
      if (held.empty()) continue;
      std::int64_t at = now;
      for (const Fault& f : faults_) {
        if (f.rule.kind == FaultRule::Kind::stall && f.rule.from == from && f.active(now)) {
          at = std::max(at, f.end_ns());
        }
      }
      next = std::min(next, at);
    }
    return next;
  }

  std::unique_ptr<Endpoint> inner_;
  FaultInjection* inner_faults_;
  std::size_t depth_;
  std::vector<Fault> faults_;
  std::map<AppIndex, std::deque<Held>> outgoing_;
  std::map<AppIndex, std::deque<Completion>> incoming_;
  std::vector<AppIndex> refused_;  // peers the inner endpoint had no room for at the last poll
};

}  // namespace

std::string_view to_string(FaultRule::Kind kind) {
  switch (kind) {
    case FaultRule::Kind::delay:
      return "delay";
    case FaultRule::Kind::cut:
      return "cut";
    case FaultRule::Kind::stall:
      return "stall";
    case FaultRule::Kind::corrupt:
      return "corrupt";
    case FaultRule::Kind::reset:
      return "reset";
  }
  return "fault";
}

Result<std::unique_ptr<Endpoint>> with_faults(std::unique_ptr<Endpoint> endpoint,
                                              const EndpointOptions& options,
                                              std::span<const FaultRule> rules) {
  std::vector<Fault> here;
  for (const FaultRule& r : rules) {
    const bool receiving = r.kind == FaultRule::Kind::stall;
    if ((receiving ? r.to : r.from) != options.self) continue;
    if (r.kind == FaultRule::Kind::corrupt) {
      const FaultInjection* f = fault_injection(*endpoint);
      if (f == nullptr || !f->can_corrupt()) {
        return Error(
            "fault 'corrupt' needs a transport that checks a payload CRC: tcp or shm, "
            "with transports.payload_crc: true");
      }
    }
    if (r.kind == FaultRule::Kind::reset) {
      const FaultInjection* f = fault_injection(*endpoint);
      if (f == nullptr || !f->can_reset()) {
        return Error("fault 'reset' needs a transport with connections to reset: tcp");
      }
    }
    here.push_back(Fault{r});
  }
  if (here.empty()) return endpoint;
  return std::unique_ptr<Endpoint>(
      std::make_unique<FaultEndpoint>(std::move(endpoint), options, std::move(here)));
}

}  // namespace daqflow::transport
