#include "connection_reaper.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
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
                                   std::chrono::milliseconds limit, std::size_t max_per_port)
    : ports_(ports.begin(), ports.end()),
      limit_(limit),
      max_per_port_(max_per_port),
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
  struct Open {
    std::uint16_t port;
    unsigned long inode;
    std::chrono::steady_clock::time_point since;
    core::UniqueFd dup;
  };
  std::vector<Open> open;
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
    core::UniqueFd dup(::fcntl(fd, F_DUPFD_CLOEXEC, 0));
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
    const std::uint16_t port = port_of(local);
    if (ports_.count(port) == 0) continue;  // not accepted on a control port
    open.push_back(Open{port, static_cast<unsigned long>(st.st_ino), now, std::move(dup)});
  }

  std::vector<std::pair<const Open*, std::string>> cut;
  {
    const std::lock_guard lock(mutex_);
    std::map<unsigned long, std::chrono::steady_clock::time_point> still;
    for (Open& o : open) {
      const auto it = first_seen_.find(o.inode);
      o.since = it == first_seen_.end() ? now : it->second;
      still.emplace(o.inode, o.since);
    }
    first_seen_ = std::move(still);
    // Too old: a client that trickles its request.
    std::map<std::uint16_t, std::vector<const Open*>> kept;
    for (const Open& o : open) {
      if (now - o.since >= limit_) {
        cut.emplace_back(&o, fmt::format("open for more than {} ms", limit_.count()));
        first_seen_[o.inode] = now;  // again only if still there after another limit
      } else {
        kept[o.port].push_back(&o);
      }
    }
    // Too many on one port: the youngest go, those already being served stay.
    for (auto& [port, list] : kept) {
      if (list.size() <= max_per_port_) continue;
      std::sort(list.begin(), list.end(),
                [](const Open* a, const Open* b) { return a->since < b->since; });
      for (std::size_t i = max_per_port_; i < list.size(); ++i) {
        cut.emplace_back(list[i], fmt::format("{} connections on the port, at most {}", list.size(),
                                              max_per_port_));
      }
    }
    reaped_ += cut.size();
  }
  for (const auto& [o, why] : cut) {
    sockaddr_storage peer{};
    socklen_t len = sizeof(peer);
    const std::string from =
        ::getpeername(o->dup.get(), reinterpret_cast<sockaddr*>(&peer), &len) == 0
            ? address_of(peer)
            : std::string("?");
    spdlog::warn("control port {}: closing the connection from {}: {}", o->port, from, why);
    ::shutdown(o->dup.get(), SHUT_RDWR);
  }
}

}  // namespace daqflow::runtime
