// The network input's I/O thread: accepts one connection per FED, reads each FED's stream into
// staging chunks and publishes the validated fragments into the FED's ring (contract in
// daqflow/apps/fed/network_input.hpp).
//
// Chunk filling: bytes [parse_pos, read_pos) of the current chunk are received but not yet
// published; parse_pos is always at a frame boundary. While read_pos is below chunk_size -
// max_frame the thread reads as much as the socket has, up to that bound, so that any frame that
// starts below it ends inside the chunk. Above it, the thread reads exactly to the end of the
// frame (or FEROL block) in progress, its header first if need be, and once a fragment is
// complete moves on to a fresh chunk: no fragment ever straddles two chunks. A framed fragment
// is never moved; the blocks of a FEROL fragment are made contiguous within the chunk.

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "daqflow/apps/fed/fed_stream.hpp"
#include "daqflow/core/log.hpp"
#include "daqflow/wire/fed.hpp"
#include "daqflow/wire/ferol.hpp"
#include "network_input_impl.hpp"

namespace daqflow::apps::fed {
namespace {

constexpr int kReadsPerService = 8;  // then the next FED gets its turn
constexpr int kSocketBufferBytes = 4 << 20;
constexpr std::uint64_t kWakeTag = ~std::uint64_t{0};

std::string peer_of(const sockaddr_in& sa) {
  std::array<char, INET_ADDRSTRLEN> text{};
  ::inet_ntop(AF_INET, &sa.sin_addr, text.data(), text.size());
  return fmt::format("{}:{}", text.data(), ntohs(sa.sin_port));
}

}  // namespace

void NetworkInput::run() {
  std::array<epoll_event, 64> events{};
  bool io_stopped = false;
  while (!stopping_.load(std::memory_order_acquire)) {
    if (!io_stopped && failure_.failed()) {
      stop_all_io();
      io_stopped = true;
    }
    bool any_paused = false;
    for (auto& fed : feds_) {
      if (fed->paused) service(*fed);
      any_paused = any_paused || fed->paused;
    }
    // While a FED waits for its consumer, look again soon; otherwise sleep until data comes.
    const int n = ::epoll_wait(epoll_fd_.get(), events.data(), static_cast<int>(events.size()),
                               any_paused ? 1 : 200);
    if (n < 0) {
      if (errno == EINTR) continue;
      set_failure(fmt::format("{}: epoll_wait: {}", settings_.name, std::strerror(errno)));
      break;
    }
    for (int i = 0; i < n; ++i) {
      const std::uint64_t tag = events[static_cast<std::size_t>(i)].data.u64;
      if (tag == kWakeTag) {
        std::uint64_t count = 0;
        (void)!::read(wake_fd_.get(), &count, sizeof count);
        continue;
      }
      if (io_stopped) continue;
      Fed& fed = *feds_[tag >> 1];
      if ((tag & 1) == 0) {
        accept_on(fed);
      } else {
        on_connection_event(fed, events[static_cast<std::size_t>(i)].events);
      }
    }
  }
}

void NetworkInput::stop_all_io() {
  for (auto& fed : feds_) {
    ::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_DEL, fed->listen_fd.get(), nullptr);
    if (fed->in_epoll) ::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_DEL, fed->conn_fd.get(), nullptr);
    fed->in_epoll = fed->watching = false;
    fed->paused = false;
    fed->dead = true;
  }
}

void NetworkInput::accept_on(Fed& fed) {
  sockaddr_in sa{};
  socklen_t len = sizeof sa;
  core::UniqueFd fd(::accept4(fed.listen_fd.get(), reinterpret_cast<sockaddr*>(&sa), &len,
                              SOCK_NONBLOCK | SOCK_CLOEXEC));
  if (!fd) return;  // the peer went away before accept; nothing to do
  const std::string peer = peer_of(sa);
  if (fed.conn_fd || fed.dead) {
    spdlog::warn("{}: FED {}: refusing a connection from {} ({})", settings_.name, fed.id, peer,
                 fed.dead ? "its stream failed" : "already connected from " + fed.peer);
    return;
  }
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVBUF, &kSocketBufferBytes, sizeof kSocketBufferBytes);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = std::uint64_t{fed.index} << 1 | 1;
  if (::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, fd.get(), &ev) != 0) {
    spdlog::error("{}: FED {}: epoll: {}", settings_.name, fed.id, std::strerror(errno));
    return;
  }
  fed.conn_fd = std::move(fd);
  fed.peer = peer;
  fed.in_epoll = fed.watching = true;
  fed.paused = false;
  spdlog::info("{}: FED {} connected from {} (next: {})", settings_.name, fed.id, peer,
               event_name(event_of(fed, std::nullopt)));
  service(fed);
}

void NetworkInput::on_connection_event(Fed& fed, std::uint32_t events) {
  if (!fed.conn_fd) return;  // closed earlier in this round
  if (fed.paused && (events & (EPOLLERR | EPOLLHUP)) != 0) {
    // Reported even without EPOLLIN interest: stop listening until the FED is read again,
    // which then finds the error or the end of the stream.
    ::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_DEL, fed.conn_fd.get(), nullptr);
    fed.in_epoll = fed.watching = false;
    return;
  }
  service(fed);
}

void NetworkInput::set_watch(Fed& fed, bool on) {
  if (!fed.conn_fd || fed.watching == on) return;
  epoll_event ev{};
  ev.events = on ? std::uint32_t{EPOLLIN} : 0u;
  ev.data.u64 = std::uint64_t{fed.index} << 1 | 1;
  const int op = fed.in_epoll ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
  if (::epoll_ctl(epoll_fd_.get(), op, fed.conn_fd.get(), &ev) == 0) {
    fed.in_epoll = true;
    fed.watching = on;
  }
}

void NetworkInput::pause(Fed& fed) {
  fed.paused = true;
  set_watch(fed, false);
}

void NetworkInput::close_connection(Fed& fed) {
  if (!fed.conn_fd) return;
  if (fed.in_epoll) ::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_DEL, fed.conn_fd.get(), nullptr);
  fed.conn_fd.reset();
  fed.in_epoll = fed.watching = fed.paused = false;
}

void NetworkInput::service(Fed& fed) {
  for (int round = 0; round < kReadsPerService; ++round) {
    if (fed.dead || failure_.failed()) return;
    if (!parse(fed)) return pause(fed);
    if (fed.dead || !fed.conn_fd) {
      fed.paused = false;
      return;
    }
    std::size_t limit = 0;
    if (!next_read_window(fed, limit)) return pause(fed);
    if (fed.paused) {
      fed.paused = false;
      set_watch(fed, true);
    }
    const ssize_t n =
        ::read(fed.conn_fd.get(), fed.chunk.data() + fed.read_pos, limit - fed.read_pos);
    if (n > 0) {
      fed.read_pos += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      set_watch(fed, true);
      return;
    }
    // The end of the stream (or a reset): fine between fragments, an error within one.
    const std::string how = n == 0 ? "closed" : fmt::format("failed ({})", std::strerror(errno));
    const std::size_t pending = fed.read_pos - fed.parse_pos;
    if (pending != 0) {
      fail_stream(fed, truncation(fed, how));
      return;
    }
    spdlog::info(
        "{}: FED {}: the connection from {} {} between fragments (next: {}); "
        "a new connection may go on from there",
        settings_.name, fed.id, fed.peer, how, event_name(event_of(fed, std::nullopt)));
    close_connection(fed);
    return;
  }
}

bool NetworkInput::next_read_window(Fed& fed, std::size_t& limit) {
  const std::size_t free_limit = chunk_size_ - max_frame_;
  if (fed.chunk && fed.read_pos >= free_limit && fed.parse_pos == fed.read_pos) {
    fed.chunk.reset();  // full: the ring's fragments keep it alive until consumed
  }
  if (!fed.chunk) {
    fed.chunk = fed.pool->acquire();
    if (!fed.chunk) return false;
    fed.read_pos = fed.parse_pos = fed.raw_pos = 0;
  }
  if (fed.read_pos < free_limit) {
    limit = free_limit;
    return true;
  }
  if (settings_.framing == FedFraming::ferol) {
    // To the end of the block in progress (parse() has checked its header).
    const std::size_t pending = fed.read_pos - fed.raw_pos;
    limit = fed.raw_pos + wire::kFerolHeaderSize;
    if (pending >= wire::kFerolHeaderSize) {
      wire::FerolHeader block;
      (void)wire::decode_ferol_header({fed.chunk.data() + fed.raw_pos, pending}, block);
      limit += block.data_length;
    }
    // max_frame_ bounds a fragment's blocks, so this holds; never read past the chunk anyway.
    if (limit > chunk_size_) {
      fail_stream(fed, fmt::format("block {}: the fragment does not fit the staging memory",
                                   fed.next_packet));
      return false;
    }
    return true;
  }
  const std::size_t pending = fed.read_pos - fed.parse_pos;
  if (pending < kFedFrameHeaderSize) {
    limit = fed.parse_pos + kFedFrameHeaderSize;
    return true;
  }
  // parse() has checked this header and found its frame incomplete.
  FedFrameHeader frame;
  (void)decode_fed_frame({fed.chunk.data() + fed.parse_pos, pending}, frame);
  limit = fed.parse_pos + kFedFrameHeaderSize + std::size_t{frame.length_words} * 8;
  return true;
}

std::string NetworkInput::truncation(const Fed& fed, const std::string& how) const {
  const std::size_t pending = fed.read_pos - fed.parse_pos;
  if (settings_.framing == FedFraming::ferol) {
    const std::size_t in_block = fed.read_pos - fed.raw_pos;
    wire::FerolHeader block;
    const bool has_header = in_block >= wire::kFerolHeaderSize &&
                            wire::decode_ferol_header({fed.chunk.data() + fed.raw_pos, in_block},
                                                      block) == wire::FerolStatus::ok;
    return has_header ? fmt::format(
                            "stream truncated: the connection from {} {} within block {} "
                            "({} of its {} bytes received)",
                            fed.peer, how, fed.next_packet, in_block - wire::kFerolHeaderSize,
                            block.data_length)
                      : fmt::format(
                            "stream truncated: the connection from {} {} within the "
                            "header of block {} ({} of {} bytes received)",
                            fed.peer, how, fed.next_packet, in_block, wire::kFerolHeaderSize);
  }
  FedFrameHeader frame;
  const bool framed =
      pending >= kFedFrameHeaderSize &&
      decode_fed_frame({fed.chunk.data() + fed.parse_pos, pending}, frame) == FedFrameStatus::ok;
  return framed ? fmt::format(
                      "stream truncated: the connection from {} {} within the fragment "
                      "({} of {} bytes received)",
                      fed.peer, how, pending - kFedFrameHeaderSize,
                      std::size_t{frame.length_words} * 8)
                : fmt::format(
                      "stream truncated: the connection from {} {} within a frame "
                      "header ({} of {} bytes received)",
                      fed.peer, how, pending, kFedFrameHeaderSize);
}

bool NetworkInput::parse(Fed& fed) {
  return settings_.framing == FedFraming::ferol ? parse_blocks(fed) : parse_frames(fed);
}

void NetworkInput::publish(Fed& fed, std::size_t offset, std::size_t size, std::uint32_t flags) {
  Fragment fragment{fed.chunk.share(), static_cast<std::uint32_t>(offset),
                    static_cast<std::uint32_t>(size), flags, fed.sequence.current()};
  (void)fed.ring->try_push(std::move(fragment));
  fragments_.fetch_add(1, std::memory_order_relaxed);
  ++fed.next_event;
}

bool NetworkInput::parse_frames(Fed& fed) {
  while (!fed.dead) {
    const std::size_t available = fed.read_pos - fed.parse_pos;
    if (available < kFedFrameHeaderSize) return true;
    const std::byte* p = fed.chunk.data() + fed.parse_pos;
    FedFrameHeader frame;
    const FedFrameStatus status = decode_fed_frame({p, kFedFrameHeaderSize}, frame);
    if (status != FedFrameStatus::ok) {
      fail_stream(fed, fmt::format("{} from {}", to_string(status), fed.peer));
      return true;
    }
    const std::size_t size = std::size_t{frame.length_words} * 8;
    if (size > settings_.max_fragment_bytes) {
      fail_stream(fed, fmt::format("fragment of {} bytes from {} exceeds the maximum of {} "
                                   "(fed_max_fragment_bytes)",
                                   size, fed.peer, settings_.max_fragment_bytes));
      return true;
    }
    if (available < kFedFrameHeaderSize + size) return true;
    // size() may lag behind the consumer, never ahead of it: room seen here is real.
    if (fed.ring->size() >= fed.ring->capacity()) return false;
    bool ok = true;
    const std::uint32_t flags =
        check(fed, frame.event, frame.fed_id, {p + kFedFrameHeaderSize, size}, ok);
    if (!ok) return true;
    publish(fed, fed.parse_pos + kFedFrameHeaderSize, size, flags);
    fed.parse_pos += kFedFrameHeaderSize + size;
  }
  return true;
}

// One block at a time: its header is checked against the fragment in progress as soon as it is
// in; its data, once in, is moved down onto the end of the data before it (a fragment of one
// block is not moved); the last block completes the fragment, which is then checked whole.
bool NetworkInput::parse_blocks(Fed& fed) {
  while (!fed.dead) {
    const std::size_t available = fed.read_pos - fed.raw_pos;
    if (available < wire::kFerolHeaderSize) return true;
    std::byte* base = fed.chunk.data();
    wire::FerolHeader block;
    const wire::FerolStatus status =
        wire::decode_ferol_header({base + fed.raw_pos, wire::kFerolHeaderSize}, block);
    const bool first = fed.next_packet == 0;
    const std::size_t gathered =
        first ? 0 : fed.gather_end - (fed.parse_pos + wire::kFerolHeaderSize);
    std::string problem;
    if (status != wire::FerolStatus::ok) {
      problem = fmt::format("{} from {}", wire::to_string(status), fed.peer);
    } else if (block.fed_id != fed.id) {
      problem = fmt::format("the FEROL header names FED {} (wrong connection?)", block.fed_id);
    } else if (fed.next_packet > wire::kFerolMaxPacket) {
      problem = fmt::format("the fragment has more than {} blocks, the most a packet number counts",
                            wire::kFerolMaxPacket + 1);
    } else if (block.packet != fed.next_packet) {
      problem = fmt::format("packet number {}, expected {} (blocks out of order or lost)",
                            block.packet, fed.next_packet);
    } else if (block.first != first) {
      problem = first ? std::string("the fragment's first block lacks the first-block flag")
                      : std::string("first-block flag within a fragment (its last block missing)");
    } else if (!first && block.event != fed.block_event) {
      problem = fmt::format("the FEROL header says event number {}, the fragment's first block {}",
                            block.event, fed.block_event);
    } else if (gathered + block.data_length > settings_.max_fragment_bytes) {
      problem = fmt::format("the fragment passes the maximum of {} bytes (fed_max_fragment_bytes)",
                            settings_.max_fragment_bytes);
    } else if (block.last && gathered + block.data_length < wire::kFedMinFragmentSize) {
      problem = fmt::format(
          "the fragment ends after {} bytes, shorter than a FED header and "
          "trailer",
          gathered + block.data_length);
    }
    if (!problem.empty()) {
      // Named by the first block's event number (this one's, if it is the first and readable).
      fail_stream(
          fed, fmt::format("block {}: {}", fed.next_packet, problem),
          first && status == wire::FerolStatus::ok ? std::optional(block.event) : std::nullopt);
      return true;
    }
    if (available < wire::kFerolHeaderSize + block.data_length) return true;
    // size() may lag behind the consumer, never ahead of it: room seen here is real.
    if (block.last && fed.ring->size() >= fed.ring->capacity()) return false;
    const std::size_t data = fed.raw_pos + wire::kFerolHeaderSize;
    if (first) {
      fed.block_event = block.event;
      fed.gather_end = data;
    } else {
      std::memmove(base + fed.gather_end, base + data, block.data_length);
    }
    fed.gather_end += block.data_length;
    fed.raw_pos = data + block.data_length;
    ++fed.next_packet;
    if (!block.last) continue;
    const std::size_t start = fed.parse_pos + wire::kFerolHeaderSize;
    const std::size_t size = fed.gather_end - start;
    bool ok = true;
    const std::uint32_t flags = check(fed, fed.block_event, fed.id, {base + start, size}, ok);
    if (!ok) return true;
    publish(fed, start, size, flags);
    fed.parse_pos = fed.raw_pos;
    fed.next_packet = 0;
  }
  return true;
}

}  // namespace daqflow::apps::fed
