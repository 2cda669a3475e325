#include "socket.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace daqflow::transport::detail {

void UniqueFd::reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

namespace {

bool same_ip(const sockaddr* a, const sockaddr* b) {
  if (a == nullptr || b == nullptr || a->sa_family != b->sa_family) return false;
  if (a->sa_family == AF_INET) {
    return reinterpret_cast<const sockaddr_in*>(a)->sin_addr.s_addr ==
           reinterpret_cast<const sockaddr_in*>(b)->sin_addr.s_addr;
  }
  if (a->sa_family == AF_INET6) {
    return std::memcmp(&reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr,
                       &reinterpret_cast<const sockaddr_in6*>(b)->sin6_addr, sizeof(in6_addr)) == 0;
  }
  return false;
}

}  // namespace

bool is_this_host(const sockaddr* address) {
  if (address == nullptr) return false;
  if (address->sa_family == AF_INET) {
    const auto ip = ntohl(reinterpret_cast<const sockaddr_in*>(address)->sin_addr.s_addr);
    if ((ip >> 24) == 127) return true;
  } else if (address->sa_family == AF_INET6) {
    const auto& ip = reinterpret_cast<const sockaddr_in6*>(address)->sin6_addr;
    if (IN6_IS_ADDR_LOOPBACK(&ip)) return true;
  } else {
    return false;
  }
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return false;
  bool found = false;
  for (const ifaddrs* i = list; i != nullptr && !found; i = i->ifa_next) {
    found = same_ip(i->ifa_addr, address);
  }
  ::freeifaddrs(list);
  return found;
}

Result<SocketAddress> resolve(const std::string& host, std::uint16_t port) {
  SocketAddress a;
  a.text = host + ":" + std::to_string(port);
  auto* v4 = reinterpret_cast<sockaddr_in*>(&a.storage);
  if (::inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    a.length = sizeof(sockaddr_in);
    return a;
  }
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&a.storage);
  if (::inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    a.length = sizeof(sockaddr_in6);
    return a;
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (rc != 0 || found == nullptr) {
    return Error("cannot resolve host '" + host + "': " + ::gai_strerror(rc));
  }
  std::memcpy(&a.storage, found->ai_addr, found->ai_addrlen);
  a.length = found->ai_addrlen;
  ::freeaddrinfo(found);
  return a;
}

void tune(int fd, std::size_t buffer_bytes) {
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (buffer_bytes > 0) {
    const int bytes = static_cast<int>(std::min<std::size_t>(buffer_bytes, 1u << 30));
    ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
  }
}

Result<UniqueFd> listen_on(const SocketAddress& address, std::size_t buffer_bytes) {
  UniqueFd fd(::socket(address.storage.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd) return Error("cannot create a socket: " + std::string(std::strerror(errno)));
  const int one = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  tune(fd.get(), buffer_bytes);
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&address.storage), address.length) != 0) {
    return Error("cannot listen on " + address.text + ": " + std::strerror(errno));
  }
  if (::listen(fd.get(), SOMAXCONN) != 0) {
    return Error("cannot listen on " + address.text + ": " + std::strerror(errno));
  }
  return fd;
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
