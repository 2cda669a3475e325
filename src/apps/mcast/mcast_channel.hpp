#pragma once
// Control messages from one master to many nodes by UDP multicast, with a simple retry (multicast
// loss of 0.002% has been seen): every message carries a sequence number; a receiver that sees a
// gap (or, from the sender's heartbeat, that it missed the last ones) asks the sender for what it
// lacks with a negative acknowledgement (NACK) sent unicast to the address the data came from; the
// sender multicasts the repair from its history. A receiver delivers in order and counts what it
// lost before the retry and what it could not get back (lost after retry: the sender's history no
// longer held it, or the retries ran out).
//
// Datagrams, little-endian, 32-byte header then the payload:
//   0 magic "DQMC" | 4 type (1 data, 2 repair, 3 heartbeat, 4 nack) | 5 reserved (3 B) |
//   8 sequence u64 (heartbeat: the last sent; nack: count of ranges) | 16 payload bytes u32 |
//   20 reserved u32 | 24 session u64 (the sender's start time: a restarted sender is new)
// A NACK's payload is ranges of (first u64, count u32, reserved u32).
//
// Sockets are non-blocking; pump() does the work of one turn. One thread per object.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "daqflow/core/net.hpp"
#include "daqflow/core/random.hpp"
#include "daqflow/core/result.hpp"

namespace daqflow::apps::mcast {

inline constexpr std::size_t kHeaderSize = 32;
inline constexpr std::size_t kMaxPayload = 8192;

struct Group {
  std::string address;  // e.g. 239.255.0.1
  std::uint16_t port = 0;
  std::string interface = "127.0.0.1";  // the multicast interface (IP_MULTICAST_IF)
};

// A master's `multicast` parameter as its settings carry it (clock_master, ts_manager).
struct MasterGroupSettings {
  std::string group;  // empty: none (over the transport)
  std::uint32_t port = 0;
  std::string interface;
  std::uint64_t history = 0;  // datagrams kept for repairs
};
// The group of a master's settings; an error when the address has no port.
[[nodiscard]] Result<Group> group_of(const MasterGroupSettings& s);
// The group of a master's `multicast` parameter as configured, for its nodes, which join the
// master's group (one place in the configuration); an empty address: none.
[[nodiscard]] Group group_of(const nlohmann::json& multicast);

struct SenderStats {
  std::uint64_t sent = 0;
  std::uint64_t repairs_sent = 0;
  std::uint64_t nacks_received = 0;
  std::uint64_t repairs_unavailable = 0;  // asked for, no longer in the history
  std::uint64_t bytes = 0;                // of every datagram sent: data, repairs, heartbeats
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(SenderStats, sent, repairs_sent, nacks_received,
                                   repairs_unavailable, bytes)

class Sender {
 public:
  static Result<Sender> open(const Group& group, std::size_t history);
  // Sends the next message; false when the socket's buffer is full (try again).
  [[nodiscard]] bool send(std::span<const std::byte> payload);
  // Answers NACKs and sends a heartbeat when due; returns datagrams handled.
  int pump(std::int64_t now_ns);
  [[nodiscard]] int fd() const { return fd_.get(); }
  [[nodiscard]] const SenderStats& stats() const { return stats_; }
  [[nodiscard]] std::uint64_t next_sequence() const { return next_; }

 private:
  bool transmit(std::uint8_t type, std::uint64_t seq, std::span<const std::byte> payload);
  core::UniqueFd fd_;
  core::SocketAddress group_;
  std::uint64_t session_ = 0;
  std::uint64_t next_ = 0;
  std::size_t history_size_ = 0;
  std::deque<std::vector<std::byte>> history_;  // messages [next_ - size, next_)
  std::int64_t next_heartbeat_ns_ = 0;
  SenderStats stats_;
  std::vector<std::byte> buffer_;
};

struct ReceiverStats {
  std::uint64_t delivered = 0;  // in order, once each
  std::uint64_t lost_before_retry =
      0;                               // missing when first noticed (a gap or behind the heartbeat)
  std::uint64_t recovered = 0;         // of those, delivered after a NACK
  std::uint64_t lost_after_retry = 0;  // given up: unavailable or out of retries
  std::uint64_t duplicates = 0;
  std::uint64_t nacks_sent = 0;
  std::uint64_t dropped_injected = 0;  // tests: datagrams dropped on purpose
  std::uint64_t malformed = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(ReceiverStats, delivered, lost_before_retry, recovered,
                                   lost_after_retry, duplicates, nacks_sent, dropped_injected,
                                   malformed)

class Receiver {
 public:
  // drop_fraction (tests): drop this fraction of incoming data and repair datagrams, as a lossy
  // network would. nack_interval_ns: time between NACKs for one gap; max_nacks: then give up.
  static Result<Receiver> open(const Group& group, double drop_fraction, std::uint64_t seed,
                               std::int64_t nack_interval_ns, std::uint32_t max_nacks);
  // Reads what arrived, delivers in order through `deliver`, sends NACKs when due.
  template <typename F>
  int pump(std::int64_t now_ns, F&& deliver) {
    const int n = read(now_ns);
    while (!ready_.empty()) {
      deliver(std::span<const std::byte>(ready_.front()));
      ready_.pop_front();
    }
    nack(now_ns);
    return n;
  }
  [[nodiscard]] int fd() const { return fd_.get(); }
  [[nodiscard]] const ReceiverStats& stats() const { return stats_; }
  // Missing messages, and whether every sequence up to the sender's last heartbeat is here.
  [[nodiscard]] std::size_t missing() const { return missing_.size(); }
  // Messages known to exist and not delivered yet (held behind a gap, or missing).
  [[nodiscard]] std::size_t pending() const { return held_.size() + missing_.size(); }

 private:
  struct Missing {
    std::int64_t next_nack_ns = 0;
    std::uint32_t nacks = 0;
  };
  int read(std::int64_t now_ns);
  void accept(std::uint64_t seq, std::span<const std::byte> payload, bool repair);
  void note_up_to(std::uint64_t last, std::int64_t now_ns);  // seqs below last+1 exist
  void advance();
  void nack(std::int64_t now_ns);

  core::UniqueFd fd_;       // the group's datagrams
  core::UniqueFd nack_fd_;  // NACKs go out from an address of the interface, not the group
  double drop_fraction_ = 0;
  core::Xoshiro rng_;
  std::int64_t nack_interval_ns_ = 0;
  std::uint32_t max_nacks_ = 0;
  bool started_ = false;
  std::uint64_t session_ = 0;
  std::uint64_t expected_ = 0;  // next to deliver
  std::uint64_t seen_ = 0;      // one past the highest sequence known to exist
  std::map<std::uint64_t, std::vector<std::byte>> held_;  // arrived beyond a gap
  std::map<std::uint64_t, Missing> missing_;
  std::deque<std::vector<std::byte>> ready_;
  sockaddr_storage sender_{};
  socklen_t sender_length_ = 0;
  ReceiverStats stats_;
  std::vector<std::byte> buffer_;
};

}  // namespace daqflow::apps::mcast
