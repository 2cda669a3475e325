#pragma once
// The ucx endpoint's incoming messages in the order their active messages arrived, until they
// are handed to the application. An arrival may wait for a receive buffer, or for its
// rendezvous data, while later ones are complete already: completions leave from the front only,
// which keeps every peer's messages in order.
//
// Arrivals are named by a 64-bit id that keeps counting up; UCX callbacks carry the id (not a
// pointer), so the ring may grow when a burst outruns it (the only allocation, and only past the
// largest burst so far). Single thread.

#include <ucp/api/ucp.h>

#include <bit>
#include <cstdint>
#include <vector>

#include "daqflow/core/buffer_pool.hpp"
#include "daqflow/transport/address.hpp"
#include "daqflow/wire/header.hpp"

namespace daqflow::transport::ucx {

struct Arrival {
  enum class State : std::uint8_t {
    waiting,    // needs a receive buffer; data holds UCX's descriptor
    receiving,  // rendezvous data on its way into buffer
    ready,      // complete: to the application when it reaches the front
    dropped,    // from a failed peer, or discarded while closing: skipped
  };
  State state = State::dropped;
  bool bye = false;   // an orderly goodbye: becomes peer_closed
  bool rndv = false;  // data is a rendezvous descriptor (else persistent eager data)
  AppIndex peer = wire::kNoApplication;
  wire::MessageHeader header;
  void* data = nullptr;     // UCX's descriptor while waiting
  void* request = nullptr;  // the receive in progress
  core::Buffer buffer;
  std::vector<std::byte> spill;  // eager data UCX would not keep, while no buffer was free
};

class Arrivals {
 public:
  explicit Arrivals(std::size_t capacity) : slots_(std::bit_ceil(capacity < 2 ? 2 : capacity)) {}

  [[nodiscard]] bool empty() const { return head_ == tail_; }
  [[nodiscard]] std::size_t size() const { return static_cast<std::size_t>(tail_ - head_); }
  [[nodiscard]] std::uint64_t head_id() const { return head_; }
  [[nodiscard]] std::uint64_t tail_id() const { return tail_; }
  [[nodiscard]] bool contains(std::uint64_t id) const { return id >= head_ && id < tail_; }

  Arrival& operator[](std::uint64_t id) { return slots_[id & (slots_.size() - 1)]; }
  Arrival& front() { return (*this)[head_]; }
  [[nodiscard]] const Arrival& front() const { return slots_[head_ & (slots_.size() - 1)]; }

  // A fresh arrival at the back; returns its id.
  std::uint64_t push() {
    if (size() == slots_.size()) grow();
    Arrival& a = (*this)[tail_];
    a.state = Arrival::State::dropped;
    a.bye = false;
    a.rndv = false;
    a.peer = wire::kNoApplication;
    a.data = nullptr;
    a.request = nullptr;
    a.spill.clear();
    return tail_++;
  }
  void pop() {
    Arrival& a = front();
    a.buffer.reset();
    a.state = Arrival::State::dropped;
    ++head_;
  }

 private:
  void grow() {
    std::vector<Arrival> bigger(slots_.size() * 2);
    for (std::uint64_t id = head_; id < tail_; ++id) {
      bigger[id & (bigger.size() - 1)] = std::move((*this)[id]);
    }
    slots_.swap(bigger);
  }

  std::vector<Arrival> slots_;
  std::uint64_t head_ = 0;
  std::uint64_t tail_ = 0;
};

}  // namespace daqflow::transport::ucx
