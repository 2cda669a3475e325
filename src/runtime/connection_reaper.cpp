#include "connection_reaper.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <filesystem>
#include <string>

#include "daqflow/core/net.hpp"

namespace daqflow::runtime {

namespace {

std::uint16_t port_of(const sockaddr_storage& a) {
  if (a.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in&>(a).sin_port);
  if (a.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6&>(a).sin6_port);
  return 0;
}

std::string address_of(const sockaddr_storage& a) {
  char text[INET6_ADDRSTRLEN] = {};
  if (a.ss_family == AF_INET) {
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(a).sin_addr, text, sizeof(text));
  } else if (a.ss_family == AF_INET6) {
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(a).sin6_addr, text, sizeof(text));
  }
  return std::string(text) + ":" + std::to_string(port_of(a));
}

}  // namespace

ConnectionReaper::ConnectionReaper(std::vector<std::uint16_t> ports,
                                   std::chrono::milliseconds limit)
    : ports_(ports.begin(), ports.end()),
      limit_(limit),
      thread_([this](const std::stop_token& stop) {
        while (!stop.stop_requested()) {
          scan();
          std::unique_lock lock(mutex_);
          wake_.wait_for(lock, stop, std::chrono::seconds(1), [] { return false; });
        }
      }) {}

ConnectionReaper::~ConnectionReaper() {
  thread_.request_stop();
}

std::uint64_t ConnectionReaper::reaped() const {
  const std::lock_guard lock(mutex_);
  return reaped_;
}

void ConnectionReaper::scan() {
  const auto now = std::chrono::steady_clock::now();
  std::set<unsigned long> seen;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    int fd = -1;
    try {
      fd = std::stoi(entry.path().filename().string());
    } catch (const std::exception&) {
      continue;
    }
    // A duplicate holds the socket itself: whatever happens to the number fd meanwhile, what is
    // checked below and shut down is this one socket.
    const core::UniqueFd dup(::fcntl(fd, F_DUPFD_CLOEXEC, 0));
    if (!dup) continue;
    struct stat st {};
    if (::fstat(dup.get(), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    int listening = 0;
    socklen_t len = sizeof(listening);
    if (::getsockopt(dup.get(), SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || listening) {
      continue;
    }
    sockaddr_storage local{};
    len = sizeof(local);
    if (::getsockname(dup.get(), reinterpret_cast<sockaddr*>(&local), &len) != 0) continue;
    if (ports_.count(port_of(local)) == 0) continue;  // not accepted on a control port
    const unsigned long inode = st.st_ino;
    seen.insert(inode);
    std::unique_lock lock(mutex_);
    const auto [it, fresh] = first_seen_.emplace(inode, now);
    if (fresh || now - it->second < limit_) continue;
    it->second = now;  // shut down once; again only if it is still there after another limit
    ++reaped_;
    lock.unlock();
    sockaddr_storage peer{};
    len = sizeof(peer);
    const std::string from = ::getpeername(dup.get(), reinterpret_cast<sockaddr*>(&peer), &len) == 0
                                 ? address_of(peer)
                                 : std::string("?");
    spdlog::warn("control port {}: closing the connection from {}, open for more than {} ms",
                 port_of(local), from, limit_.count());
    ::shutdown(dup.get(), SHUT_RDWR);
  }
  const std::lock_guard lock(mutex_);
  for (auto it = first_seen_.begin(); it != first_seen_.end();) {
    it = seen.count(it->first) != 0 ? std::next(it) : first_seen_.erase(it);
  }
}

}  // namespace daqflow::runtime
