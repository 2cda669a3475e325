#pragma once
// Small POSIX socket helpers for the tcp transport: an owning descriptor, name resolution,
// listening and non-blocking connecting with the transport's socket options, and static
// descriptions of the errors a peer can cause (completion reasons must outlive the call).

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "daqflow/core/result.hpp"

namespace daqflow::transport::detail {

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
  void reset();

 private:
  int fd_ = -1;
};

struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;
  std::string text;  // "host:port", for messages
};

// Whether an IP address is one of this host's: loopback, or an address of one of its network
// interfaces (in this network namespace).
[[nodiscard]] bool is_this_host(const sockaddr* address);

// Resolves an IP address or host name (IPv4 or IPv6).
[[nodiscard]] Result<SocketAddress> resolve(const std::string& host, std::uint16_t port);

// A non-blocking listening socket with SO_REUSEADDR, bound to address. buffer_bytes (0: the
// kernel's default) is set before listen() so that accepted sockets inherit it.
[[nodiscard]] Result<UniqueFd> listen_on(const SocketAddress& address, std::size_t buffer_bytes);

struct DialResult {
  UniqueFd fd;
  int error = 0;           // errno when the attempt failed at once
  bool connected = false;  // connected at once (otherwise in progress: wait for EPOLLOUT)
};
// Starts a non-blocking connect.
[[nodiscard]] DialResult start_connect(const SocketAddress& address, std::size_t buffer_bytes);

// TCP_NODELAY and, when buffer_bytes > 0, SO_SNDBUF and SO_RCVBUF.
void tune(int fd, std::size_t buffer_bytes);
// The pending error of a socket (SO_ERROR), 0 if none.
[[nodiscard]] int pending_error(int fd);
// Closes with SO_LINGER 0: the peer gets a reset, as if this process had crashed.
void close_with_reset(UniqueFd& fd);

// A static description of a socket error, for completion reasons.
[[nodiscard]] std::string_view describe(int error);
// The same for a failed connection attempt.
[[nodiscard]] std::string_view describe_connect(int error);

}  // namespace daqflow::transport::detail
