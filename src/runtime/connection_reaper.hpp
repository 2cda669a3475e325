#pragma once
// Cuts connections to the control ports that have been open too long, or are too many
// (docs/control-api.md, Limits). The HTTP library serves each connection on one of a few threads
// and gives up on a client only when it sends nothing for its read timeout; a client that trickles
// a byte every few seconds would hold a thread for as long as it likes, and a handful of them the
// whole port. No honest client needs long: an idle keep-alive connection is closed after 1 s and
// one serves at most 5 requests. Once a second this thread looks at the process's sockets and shuts
// down (the HTTP thread then sees the end and closes it) every connection accepted on a control
// port that is older than the limit, and on a port with more than max_per_port connections the
// youngest beyond that count (the HTTP library queues accepted connections without a bound).
//
// A socket is acted on through a duplicate of its descriptor whose identity (inode, local port,
// not listening) is checked first, so a descriptor number reused meanwhile is never touched.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <stop_token>
#include <thread>
#include <vector>

namespace daqflow::runtime {

class ConnectionReaper {
 public:
  ConnectionReaper(std::vector<std::uint16_t> ports, std::chrono::milliseconds limit,
                   std::size_t max_per_port);
  ~ConnectionReaper();
  ConnectionReaper(const ConnectionReaper&) = delete;
  ConnectionReaper& operator=(const ConnectionReaper&) = delete;

  // One look at the sockets (the thread does this every second; tests call it directly).
  void scan();
  [[nodiscard]] std::uint64_t reaped() const;

 private:
  const std::set<std::uint16_t> ports_;
  const std::chrono::milliseconds limit_;
  const std::size_t max_per_port_;
  mutable std::mutex mutex_;
  std::map<unsigned long, std::chrono::steady_clock::time_point> first_seen_;  // by inode
  std::uint64_t reaped_ = 0;
  std::condition_variable_any wake_;
  std::jthread thread_;  // last: stopped and joined first
};

}  // namespace daqflow::runtime
