#pragma once
// Sockets and descriptors, once for every layer: an owning descriptor, name resolution, and a
// listening socket. The transports add their own options on top (transport/socket.hpp).

#include <sys/socket.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>

#include "daqflow/core/result.hpp"

namespace daqflow::core {

// Owns a file descriptor: closed on destruction or reset(). Not thread-safe.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  [[nodiscard]] int get() const { return fd_; }
  [[nodiscard]] explicit operator bool() const { return fd_ >= 0; }
  // Closes the descriptor (if any) and takes fd.
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;
  std::string text;  // "host:port", for messages
};

// Resolves an IP address or host name (IPv4 or IPv6); the error names the host.
[[nodiscard]] Result<SocketAddress> resolve(const std::string& host, std::uint16_t port);

// "host:port" of an IPv4 or IPv6 address, "[host]:port" for IPv6, for messages ("an unknown
// address" for another family).
[[nodiscard]] std::string address_text(const sockaddr_storage& address);
// The same of a connected socket's peer.
[[nodiscard]] std::string peer_address(int fd);

// Whether an IP address is one of this host's: loopback, or an address of one of its network
// interfaces (in this network namespace).
[[nodiscard]] bool is_this_host(const sockaddr* address);

// A listening TCP socket with SO_REUSEADDR bound to address; non-blocking when asked. tune, if
// given, sets options before listen(), which accepted sockets inherit (buffer sizes must be set
// then for the window scale). The error names the address and says why (ErrorCode::unavailable:
// e.g. the port is taken).
[[nodiscard]] Result<UniqueFd> listen_tcp(const SocketAddress& address, bool non_blocking,
                                          const std::function<void(int fd)>& tune = {},
                                          int backlog = SOMAXCONN);

}  // namespace daqflow::core
