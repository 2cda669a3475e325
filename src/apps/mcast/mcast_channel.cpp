#include "mcast_channel.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "daqflow/core/clock.hpp"
#include "daqflow/wire/endian.hpp"

namespace daqflow::apps::mcast {

namespace {

constexpr std::uint32_t kMagic = 0x434d5144;  // "DQMC" read little-endian
constexpr std::uint8_t kData = 1;
constexpr std::uint8_t kRepair = 2;
constexpr std::uint8_t kHeartbeat = 3;
constexpr std::uint8_t kNack = 4;
constexpr std::int64_t kHeartbeatNs = 20'000'000;
constexpr std::size_t kRangeSize = 16;
constexpr std::size_t kMaxRanges = (kMaxPayload) / kRangeSize;
constexpr int kReceiveBuffer = 32 << 20;

Error sys_error(const std::string& what) {
  return Error(code_of_errno(errno), what + ": " + std::strerror(errno));
}

Result<in_addr> ipv4(const std::string& text, const char* what) {
  in_addr a{};
  if (inet_pton(AF_INET, text.c_str(), &a) != 1) {
    return Error(std::string(what) + " '" + text + "' is no IPv4 address");
  }
  return a;
}

void put_header(std::byte* p, std::uint8_t type, std::uint64_t seq, std::uint32_t size,
                std::uint64_t session) {
  std::memset(p, 0, kHeaderSize);
  wire::store_le32(p, kMagic);
  p[4] = static_cast<std::byte>(type);
  wire::store_le64(p + 8, seq);
  wire::store_le32(p + 16, size);
  wire::store_le64(p + 24, session);
}

}  // namespace

Result<Group> group_of(const MasterGroupSettings& s) {
  if (s.port == 0) return Error("the group '" + s.group + "' needs its port");
  return Group{s.group, static_cast<std::uint16_t>(s.port), s.interface};
}

Group group_of(const nlohmann::json& multicast) {
  Group g;
  g.address = multicast.value("group", std::string());
  g.port = multicast.value("port", std::uint16_t{0});
  g.interface = multicast.value("interface", std::string("127.0.0.1"));
  return g;
}

Result<Sender> Sender::open(const Group& group, std::size_t history) {
  auto address = ipv4(group.address, "multicast group");
  if (!address) return address.error();
  if (!IN_MULTICAST(ntohl(address->s_addr))) {
    return Error("multicast group '" + group.address + "' is not in 224.0.0.0/4");
  }
  auto interface = ipv4(group.interface, "multicast interface");
  if (!interface) return interface.error();
  Sender s;
  s.fd_.reset(::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!s.fd_) return sys_error("multicast sender socket");
  // Bound to an ephemeral port of the interface: NACKs come back to it.
  sockaddr_in local{};
  local.sin_family = AF_INET;
  local.sin_addr = *interface;
  if (::bind(s.fd_.get(), reinterpret_cast<sockaddr*>(&local), sizeof local) != 0) {
    return sys_error("multicast sender: bind to " + group.interface);
  }
  const unsigned char loop = 1;
  const unsigned char ttl = 1;
  if (::setsockopt(s.fd_.get(), IPPROTO_IP, IP_MULTICAST_IF, &*interface, sizeof(in_addr)) != 0 ||
      ::setsockopt(s.fd_.get(), IPPROTO_IP, IP_MULTICAST_LOOP, &loop, sizeof loop) != 0 ||
      ::setsockopt(s.fd_.get(), IPPROTO_IP, IP_MULTICAST_TTL, &ttl, sizeof ttl) != 0) {
    return sys_error("multicast sender: socket options");
  }
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_addr = *address;
  to.sin_port = htons(group.port);
  std::memcpy(&s.group_.storage, &to, sizeof to);
  s.group_.length = sizeof to;
  s.group_.text = group.address + ":" + std::to_string(group.port);
  s.session_ = static_cast<std::uint64_t>(core::monotonic_ns());
  s.history_size_ = std::max<std::size_t>(history, 1);
  s.buffer_.resize(kHeaderSize + kMaxPayload);
  return s;
}

bool Sender::transmit(std::uint8_t type, std::uint64_t seq, std::span<const std::byte> payload) {
  put_header(buffer_.data(), type, seq, static_cast<std::uint32_t>(payload.size()), session_);
  std::copy(payload.begin(), payload.end(), buffer_.data() + kHeaderSize);
  const ssize_t n = ::sendto(fd_.get(), buffer_.data(), kHeaderSize + payload.size(), 0,
                             reinterpret_cast<const sockaddr*>(&group_.storage), group_.length);
  if (n != static_cast<ssize_t>(kHeaderSize + payload.size())) return false;
  stats_.bytes += kHeaderSize + payload.size();
  return true;
}

bool Sender::send(std::span<const std::byte> payload) {
  if (payload.size() > kMaxPayload) return false;
  if (!transmit(kData, next_, payload)) return false;
  history_.emplace_back(payload.begin(), payload.end());
  if (history_.size() > history_size_) history_.pop_front();
  ++next_;
  ++stats_.sent;
  return true;
}

int Sender::pump(std::int64_t now_ns) {
  int handled = 0;
  for (;;) {
    std::array<std::byte, kHeaderSize + kMaxPayload> in{};
    sockaddr_storage from{};
    socklen_t from_length = sizeof from;
    const ssize_t n = ::recvfrom(fd_.get(), in.data(), in.size(), 0,
                                 reinterpret_cast<sockaddr*>(&from), &from_length);
    if (n < 0) break;
    ++handled;
    if (static_cast<std::size_t>(n) < kHeaderSize || wire::load_le32(in.data()) != kMagic ||
        static_cast<std::uint8_t>(in[4]) != kNack || wire::load_le64(in.data() + 24) != session_) {
      continue;
    }
    ++stats_.nacks_received;
    const std::uint64_t ranges = std::min<std::uint64_t>(
        wire::load_le64(in.data() + 8), (static_cast<std::size_t>(n) - kHeaderSize) / kRangeSize);
    const std::uint64_t oldest = next_ - history_.size();
    for (std::uint64_t r = 0; r < ranges; ++r) {
      const std::byte* p = in.data() + kHeaderSize + r * kRangeSize;
      const std::uint64_t first = wire::load_le64(p);
      const std::uint32_t count = std::min<std::uint32_t>(wire::load_le32(p + 8), 4096);
      for (std::uint64_t seq = first; seq < first + count && seq < next_; ++seq) {
        if (seq < oldest) {
          ++stats_.repairs_unavailable;
          continue;
        }
        if (transmit(kRepair, seq, history_[seq - oldest])) ++stats_.repairs_sent;
      }
    }
  }
  if (now_ns >= next_heartbeat_ns_ && next_ > 0) {
    // Tells the receivers the last sequence sent, so that they notice losses at the tail.
    (void)transmit(kHeartbeat, next_ - 1, {});
    next_heartbeat_ns_ = now_ns + kHeartbeatNs;
  }
  return handled;
}

Result<Receiver> Receiver::open(const Group& group, double drop_fraction, std::uint64_t seed,
                                std::int64_t nack_interval_ns, std::uint32_t max_nacks) {
  auto address = ipv4(group.address, "multicast group");
  if (!address) return address.error();
  auto interface = ipv4(group.interface, "multicast interface");
  if (!interface) return interface.error();
  Receiver r;
  r.fd_.reset(::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!r.fd_) return sys_error("multicast receiver socket");
  const int one = 1;
  ::setsockopt(r.fd_.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  ::setsockopt(r.fd_.get(), SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
  // Large enough for bursts (on this machine default buffers lost ~2% at 170 MB/s).
  if (::setsockopt(r.fd_.get(), SOL_SOCKET, SO_RCVBUFFORCE, &kReceiveBuffer,
                   sizeof kReceiveBuffer) != 0) {
    ::setsockopt(r.fd_.get(), SOL_SOCKET, SO_RCVBUF, &kReceiveBuffer, sizeof kReceiveBuffer);
  }
  sockaddr_in local{};
  local.sin_family = AF_INET;
  local.sin_addr = *address;  // only this group's datagrams
  local.sin_port = htons(group.port);
  if (::bind(r.fd_.get(), reinterpret_cast<sockaddr*>(&local), sizeof local) != 0) {
    return sys_error("multicast receiver: bind to " + group.address + ":" +
                     std::to_string(group.port));
  }
  ip_mreq join{};
  join.imr_multiaddr = *address;
  join.imr_interface = *interface;
  if (::setsockopt(r.fd_.get(), IPPROTO_IP, IP_ADD_MEMBERSHIP, &join, sizeof join) != 0) {
    return sys_error("multicast receiver: joining " + group.address + " on " + group.interface);
  }
  r.nack_fd_.reset(::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  sockaddr_in nack_local{};
  nack_local.sin_family = AF_INET;
  nack_local.sin_addr = *interface;
  if (!r.nack_fd_ ||
      ::bind(r.nack_fd_.get(), reinterpret_cast<sockaddr*>(&nack_local), sizeof nack_local) != 0) {
    return sys_error("multicast receiver: NACK socket on " + group.interface);
  }
  r.drop_fraction_ = drop_fraction;
  r.rng_ = core::Xoshiro(seed);
  r.nack_interval_ns_ = nack_interval_ns;
  r.max_nacks_ = max_nacks;
  r.buffer_.resize(kHeaderSize + kMaxPayload);
  return r;
}

int Receiver::read(std::int64_t now_ns) {
  int handled = 0;
  for (;;) {
    sockaddr_storage from{};
    socklen_t from_length = sizeof from;
    const ssize_t n = ::recvfrom(fd_.get(), buffer_.data(), buffer_.size(), 0,
                                 reinterpret_cast<sockaddr*>(&from), &from_length);
    if (n < 0) break;
    ++handled;
    const std::byte* p = buffer_.data();
    if (static_cast<std::size_t>(n) < kHeaderSize || wire::load_le32(p) != kMagic) {
      ++stats_.malformed;
      continue;
    }
    const auto type = static_cast<std::uint8_t>(p[4]);
    const std::uint64_t seq = wire::load_le64(p + 8);
    const std::uint32_t size = wire::load_le32(p + 16);
    const std::uint64_t session = wire::load_le64(p + 24);
    if ((type != kData && type != kRepair && type != kHeartbeat) ||
        kHeaderSize + std::size_t{size} != static_cast<std::size_t>(n)) {
      ++stats_.malformed;
      continue;
    }
    if (type != kHeartbeat && drop_fraction_ > 0 &&
        static_cast<double>(rng_.next() >> 11) * 0x1.0p-53 < drop_fraction_) {
      ++stats_.dropped_injected;
      continue;
    }
    if (!started_ || session != session_) {
      // The sender's session starts at sequence 0: whatever was sent before this datagram is
      // asked for too (a receiver that joins late gets the sender's history).
      started_ = true;
      session_ = session;
      expected_ = seen_ = 0;
      held_.clear();
      missing_.clear();
    }
    std::memcpy(&sender_, &from, from_length);
    sender_length_ = from_length;
    if (type == kHeartbeat) {
      note_up_to(seq, now_ns);
    } else {
      if (seq > 0) note_up_to(seq - 1, now_ns);
      accept(seq, {p + kHeaderSize, size}, type == kRepair);
      seen_ = std::max(seen_, seq + 1);
    }
  }
  advance();
  return handled;
}

void Receiver::note_up_to(std::uint64_t last, std::int64_t now_ns) {
  // Every sequence in [seen_, last] exists; those not here are lost (for now).
  for (std::uint64_t s = seen_; s <= last; ++s) {
    if (s < expected_ || held_.contains(s) || missing_.contains(s)) continue;
    missing_[s] = Missing{now_ns, 0};
    ++stats_.lost_before_retry;
  }
  seen_ = std::max(seen_, last + 1);
}

void Receiver::accept(std::uint64_t seq, std::span<const std::byte> payload, bool repair) {
  (void)repair;
  if (seq < expected_ || held_.contains(seq)) {
    ++stats_.duplicates;
    return;
  }
  if (const auto it = missing_.find(seq); it != missing_.end()) {
    missing_.erase(it);
    ++stats_.recovered;
  }
  held_.emplace(seq, std::vector<std::byte>(payload.begin(), payload.end()));
}

void Receiver::advance() {
  for (;;) {
    if (const auto it = held_.find(expected_); it != held_.end()) {
      ready_.push_back(std::move(it->second));
      held_.erase(it);
      ++expected_;
      ++stats_.delivered;
      continue;
    }
    // Given up on: skipped, so that what follows is delivered.
    if (!missing_.contains(expected_) && expected_ < seen_ && !held_.contains(expected_)) {
      ++expected_;
      continue;
    }
    break;
  }
}

void Receiver::nack(std::int64_t now_ns) {
  if (missing_.empty() || sender_length_ == 0) return;
  std::array<std::byte, kHeaderSize + kMaxPayload> out{};
  std::uint64_t ranges = 0;
  std::byte* p = out.data() + kHeaderSize;
  std::vector<std::uint64_t> give_up;
  std::uint64_t first = 0;
  std::uint32_t count = 0;
  auto flush = [&] {
    if (count == 0 || ranges == kMaxRanges) return;
    wire::store_le64(p + ranges * kRangeSize, first);
    wire::store_le32(p + ranges * kRangeSize + 8, count);
    ++ranges;
    count = 0;
  };
  for (auto& [seq, m] : missing_) {
    if (now_ns < m.next_nack_ns) continue;
    if (m.nacks >= max_nacks_) {
      give_up.push_back(seq);
      continue;
    }
    ++m.nacks;
    m.next_nack_ns = now_ns + nack_interval_ns_;
    if (count > 0 && seq == first + count) {
      ++count;
    } else {
      flush();
      first = seq;
      count = 1;
    }
  }
  flush();
  for (const std::uint64_t seq : give_up) {
    missing_.erase(seq);
    ++stats_.lost_after_retry;
  }
  if (!give_up.empty()) advance();
  if (ranges == 0) return;
  put_header(out.data(), kNack, ranges, static_cast<std::uint32_t>(ranges * kRangeSize), session_);
  if (::sendto(nack_fd_.get(), out.data(), kHeaderSize + ranges * kRangeSize, 0,
               reinterpret_cast<const sockaddr*>(&sender_), sender_length_) > 0) {
    ++stats_.nacks_sent;
  }
}

}  // namespace daqflow::apps::mcast
