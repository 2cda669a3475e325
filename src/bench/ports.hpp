#pragma once
// Which TCP ports are taken on this machine.

namespace daqflow::bench {

// Whether something listens on TCP port `port` (any address), read from /proc/net/tcp and tcp6:
// no probe connection, which a one-shot server would take for its client.
[[nodiscard]] bool tcp_port_listening(int port);

}  // namespace daqflow::bench
