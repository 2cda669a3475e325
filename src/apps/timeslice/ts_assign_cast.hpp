#pragma once
// The manager's assignments and the run's end by UDP multicast, with the retry of apps/mcast
// (docs/timeslices.md, "Assignments by multicast"): every input reads every assignment, so one
// datagram carries many of them to all inputs at once, where over the transports each input gets
// a message per assignment. A datagram's payload is whole TsAssign records (16 bytes each), in
// the order the manager made them; the channel delivers datagrams in order, so an input applies
// the assignments in the manager's order, the run's end (builder kNoApplication) last.
//
// One thread per object (the application's agent).

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "apps/mcast/mcast_channel.hpp"
#include "daqflow/core/result.hpp"
#include "daqflow/wire/timeslice.hpp"

namespace daqflow::apps::timeslice {

// The manager's side.
class AssignCaster {
 public:
  // Assignments in one datagram at most.
  static constexpr std::size_t kPerDatagram = mcast::kMaxPayload / wire::kTsAssignSize;

  static Result<AssignCaster> open(const mcast::Group& group, std::size_t history);
  // Queued for the next pump().
  void push(const wire::TsAssign& a);
  // Room for more: the socket keeps up (a few datagrams queued at most).
  [[nodiscard]] bool has_room() const { return queued_ < 4 * kPerDatagram; }
  // Sends what is queued, full datagrams first, as far as the socket takes it; answers NACKs
  // and sends the heartbeat when due. Returns the datagrams sent and handled.
  int pump(std::int64_t now_ns);
  // Everything pushed has been sent once.
  [[nodiscard]] bool idle() const { return queued_ == 0; }
  [[nodiscard]] const mcast::SenderStats& stats() const { return sender_.stats(); }

 private:
  explicit AssignCaster(mcast::Sender sender) : sender_(std::move(sender)) {}
  mcast::Sender sender_;
  std::vector<std::byte> queue_;  // records not sent yet, from sent_ on
  std::size_t sent_ = 0;          // bytes of queue_ sent
  std::size_t queued_ = 0;        // records not sent
};

// An input's side.
class AssignListener {
 public:
  // drop_fraction (tests): datagrams dropped on purpose, as a lossy network would.
  static Result<AssignListener> open(const mcast::Group& group, double drop_fraction,
                                     std::uint64_t seed);
  // Reads what arrived and calls on_assign(const wire::TsAssign&) for every assignment it can
  // deliver in order; sends NACKs when due. Returns the datagrams read; malformed ones are
  // counted.
  template <typename F>
  int pump(std::int64_t now_ns, F&& on_assign) {
    return receiver_.pump(now_ns, [&](std::span<const std::byte> payload) {
      if (payload.empty() || payload.size() % wire::kTsAssignSize != 0) {
        ++malformed_;
        return;
      }
      for (std::size_t at = 0; at < payload.size(); at += wire::kTsAssignSize) {
        wire::TsAssign a;
        if (wire::decode(payload.subspan(at, wire::kTsAssignSize), a) != wire::PayloadStatus::ok) {
          ++malformed_;
          continue;
        }
        on_assign(a);
      }
    });
  }
  [[nodiscard]] const mcast::ReceiverStats& stats() const { return receiver_.stats(); }
  [[nodiscard]] std::uint64_t malformed() const { return malformed_; }

 private:
  explicit AssignListener(mcast::Receiver receiver) : receiver_(std::move(receiver)) {}
  mcast::Receiver receiver_;
  std::uint64_t malformed_ = 0;
};

}  // namespace daqflow::apps::timeslice
