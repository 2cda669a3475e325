#include "socket.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

#include "daqflow/core/log.hpp"

// Linux 6.15 and later; older C library headers do not name it.
#ifndef TCP_RTO_MAX_MS
#define TCP_RTO_MAX_MS 44
#endif

namespace daqflow::transport::detail {

namespace {

// The longest a lost segment waits before it is sent again, in ms: the kernel's floor for
// TCP_RTO_MAX_MS (its default is 120 s). Within a DAQ network a round trip takes microseconds,
// so backing off further only delays the data once a link comes back: after an outage of
// seconds the next retransmission would otherwise come up to the outage's length later, past a
// builder's fragment timeout. Older kernels refuse the option and keep their backoff.
//
// The price: the kernel gives a connection up after 15 unanswered retransmissions
// (net.ipv4.tcp_retries2), about 15 s at this cap instead of about 15 minutes, and TCP_USER_TIMEOUT
// does not lengthen that (measured on Linux 6.18: 14.8 s with a user timeout of 30 or 60 s, 27 s
// at a 2 s cap). A link outage longer than that fails the connections with data in flight across
// it, and the applications dial again.
constexpr int kRtoMaxMs = 1000;

}  // namespace

void tune(int fd, std::size_t buffer_bytes) {
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (::setsockopt(fd, IPPROTO_TCP, TCP_RTO_MAX_MS, &kRtoMaxMs, sizeof kRtoMaxMs) != 0) {
    static std::atomic<bool> told{false};
    if (!told.exchange(true)) {
      spdlog::warn(
          "tcp: this kernel does not cap the retransmission backoff (TCP_RTO_MAX_MS, "
          "Linux 6.15 and later: {}): after a link outage, data may resume seconds after "
          "the link is back",
          std::strerror(errno));
    }
  }
  if (buffer_bytes > 0) {
    const int bytes = static_cast<int>(std::min<std::size_t>(buffer_bytes, 1u << 30));
    ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
  }
}

Result<UniqueFd> listen_on(const SocketAddress& address, std::size_t buffer_bytes) {
  return core::listen_tcp(address, /*non_blocking=*/true,
                          [buffer_bytes](int fd) { tune(fd, buffer_bytes); });
}

DialResult start_connect(const SocketAddress& address, std::size_t buffer_bytes) {
  DialResult r;
  r.fd =
      UniqueFd(::socket(address.storage.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!r.fd) {
    r.error = errno;
    return r;
  }
  // Buffers before connect(), so that the window scale is negotiated for them.
  tune(r.fd.get(), buffer_bytes);
  if (::connect(r.fd.get(), reinterpret_cast<const sockaddr*>(&address.storage), address.length) ==
      0) {
    r.connected = true;
  } else if (errno != EINPROGRESS) {
    r.error = errno;
    r.fd.reset();
  }
  return r;
}

int pending_error(int fd) {
  int error = 0;
  socklen_t length = sizeof error;
  if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0) return errno;
  return error;
}

void close_with_reset(UniqueFd& fd) {
  if (!fd) return;
  const linger hard{1, 0};
  ::setsockopt(fd.get(), SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
  fd.reset();
}

std::string_view describe(int error) {
  switch (error) {
    case ECONNRESET:
      return "connection reset by peer";
    case EPIPE:
      return "connection broken: the peer is gone";
    case ETIMEDOUT:
      return "connection timed out";
    case EHOSTUNREACH:
      return "host unreachable";
    case ENETUNREACH:
      return "network unreachable";
    case ENETDOWN:
      return "network down";
    case ECONNABORTED:
      return "connection aborted";
    case ENOTCONN:
      return "socket not connected";
    case ENOMEM:
    case ENOBUFS:
      return "out of socket memory";
    default:
      return "socket error";
  }
}

std::string_view describe_connect(int error) {
  switch (error) {
    case ECONNREFUSED:
      return "cannot connect: connection refused (is the peer listening?)";
    case ETIMEDOUT:
      return "cannot connect: connection timed out";
    case EHOSTUNREACH:
      return "cannot connect: host unreachable";
    case ENETUNREACH:
      return "cannot connect: network unreachable";
    case EADDRNOTAVAIL:
      return "cannot connect: address not available";
    case EMFILE:
    case ENFILE:
      return "cannot connect: too many open files";
    default:
      return "cannot connect: socket error";
  }
}

}  // namespace daqflow::transport::detail
