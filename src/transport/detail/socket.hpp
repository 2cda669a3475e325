#pragma once
// Socket helpers for the transports, on top of core/net.hpp: listening and non-blocking
// connecting with the transport's socket options, and static descriptions of the errors a peer
// can cause (completion reasons must outlive the call).

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "daqflow/core/net.hpp"
#include "daqflow/core/result.hpp"

namespace daqflow::transport::detail {

using core::is_this_host;
using core::resolve;
using core::SocketAddress;
using core::UniqueFd;

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

// TCP_NODELAY, retransmissions backed off to at most 1 s (TCP_RTO_MAX_MS, where the kernel
// has it) and, when buffer_bytes > 0, SO_SNDBUF and SO_RCVBUF.
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
