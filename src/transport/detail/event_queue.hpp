#pragma once
// Completions an endpoint has produced but could not hand out yet because the caller's array was
// full. Only control events go here (peer_closed, error): data completions are produced only when
// the caller has room, so this queue stays small and bounded. Single thread.

#include <algorithm>
#include <cstddef>
#include <span>
#include <vector>

#include "daqflow/transport/transport.hpp"

namespace daqflow::transport::detail {

class EventQueue {
 public:
  // Room for `capacity` events, allocated as they come (a simulation has thousands of endpoints,
  // each with room for two events per application of the cluster).
  explicit EventQueue(std::size_t capacity)
      : capacity_(capacity == 0 ? 1 : capacity), slots_(std::min<std::size_t>(capacity_, 16)) {}

  // Appends; returns false (and drops the event) when full.
  bool push(Completion&& event) {
    if (count_ == slots_.size()) {
      if (count_ == capacity_) return false;
      grow();
    }
    slots_[(head_ + count_) % slots_.size()] = std::move(event);
    ++count_;
    return true;
  }

  // Moves queued events to out[produced...]; returns the new produced count.
  std::size_t drain(std::span<Completion> out, std::size_t produced) {
    while (count_ > 0 && produced < out.size()) {
      out[produced++] = std::move(slots_[head_]);
      head_ = (head_ + 1) % slots_.size();
      --count_;
    }
    return produced;
  }

  [[nodiscard]] bool empty() const { return count_ == 0; }
  [[nodiscard]] std::size_t size() const { return count_; }
  void clear() {
    while (count_ > 0) {
      slots_[head_] = Completion{};
      head_ = (head_ + 1) % slots_.size();
      --count_;
    }
  }

 private:
  void grow() {
    std::vector<Completion> larger(std::min(capacity_, 2 * slots_.size()));
    for (std::size_t i = 0; i < count_; ++i) {
      larger[i] = std::move(slots_[(head_ + i) % slots_.size()]);
    }
    slots_ = std::move(larger);
    head_ = 0;
  }

  std::size_t capacity_;
  std::vector<Completion> slots_;
  std::size_t head_ = 0;
  std::size_t count_ = 0;
};

// Emits completions into the caller's array, spilling control events into an EventQueue when the
// array is full. One per poll() call.
class Emitter {
 public:
  Emitter(std::span<Completion> out, EventQueue& events)
      : out_(out), events_(events), produced_(events.drain(out, 0)) {}

  // Room for a data completion (recv, send_done): only when it can go straight to the caller,
  // after every event queued before it.
  [[nodiscard]] bool room() const { return events_.empty() && produced_ < out_.size(); }
  [[nodiscard]] std::size_t free() const { return room() ? out_.size() - produced_ : 0; }
  // A data completion; the caller checked room().
  Completion& next() { return out_[produced_++]; }
  // A send_done completion (type, flags and tag of the message sent, no segments); the caller
  // checked room().
  void send_done(AppIndex peer, std::uint64_t sequence, std::uint32_t size, wire::MessageType type,
                 std::uint16_t flags, std::uint64_t tag) {
    Completion& c = next();
    c.kind = Completion::Kind::send_done;
    c.peer = peer;
    c.sequence = sequence;
    c.size = size;
    c.message.clear();
    c.message.type = type;
    c.message.flags = flags;
    c.message.tag = tag;
    c.count = 1;
    c.reason = {};
  }
  // One send_done for count messages to peer, of bytes together, the last of them sequence
  // (EndpointOptions::coalesce_send_done); the caller checked room().
  void send_done_run(AppIndex peer, std::uint64_t sequence, std::uint32_t count,
                     std::uint32_t bytes, wire::MessageType type, std::uint64_t tag) {
    send_done(peer, sequence, bytes, type, 0, tag);
    out_[produced_ - 1].count = count;
  }
  // A recv completion for a message that arrived with header h (its CRC flag, the transport's
  // business, taken off); the caller adds the payload and checked room().
  Completion& recv(AppIndex peer, const wire::MessageHeader& h) {
    Completion& c = next();
    c.kind = Completion::Kind::recv;
    c.peer = peer;
    c.sequence = h.sequence;
    c.size = h.payload_size;
    c.message.clear();
    c.message.type = h.type;
    c.message.flags = static_cast<std::uint16_t>(h.flags & ~wire::kFlagPayloadCrc);
    c.message.tag = h.tag;
    c.count = 1;  // the slot may have held a coalesced send_done
    c.reason = {};
    return c;
  }
  // A control event: to the caller if possible, else queued; returns false if it had to be
  // dropped (the queue is full).
  bool event(Completion&& event) {
    if (room()) {
      out_[produced_++] = std::move(event);
      return true;
    }
    return events_.push(std::move(event));
  }
  [[nodiscard]] std::size_t produced() const { return produced_; }

 private:
  std::span<Completion> out_;
  EventQueue& events_;
  std::size_t produced_;
};

}  // namespace daqflow::transport::detail
