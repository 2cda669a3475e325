// The FED network input: set-up, sockets and the RU side (produce). The I/O thread is in
// network_input_io.cpp, fragment validation in network_input_check.cpp.

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "daqflow/core/log.hpp"
#include "daqflow/wire/fed.hpp"
#include "daqflow/wire/ferol.hpp"
#include "network_input_impl.hpp"

namespace daqflow::apps::fed {
namespace {

constexpr std::size_t kMaxChunkSize = 4u << 20;
constexpr std::size_t kMinRingSlots = 256;
constexpr std::size_t kMaxRingSlots = 65536;

}  // namespace

NetworkInput::NetworkInput(const NetworkInputSettings& settings) : settings_(settings) {}

Result<std::unique_ptr<NetworkInput>> NetworkInput::create(const NetworkInputSettings& s) {
  const auto where = [&] { return s.name; };
  if (s.fed_ids.empty()) return Error(where() + ": no FEDs");
  if (s.port == 0) return Error(where() + ": fed_port is not set (FED i listens on fed_port + i)");
  if (std::size_t{s.port} + s.fed_ids.size() - 1 > 65535) {
    return Error(fmt::format("{}: fed_port {} + {} FEDs passes port 65535", where(), s.port,
                             s.fed_ids.size()));
  }
  if (s.max_fragment_bytes < wire::kFedMinFragmentSize ||
      s.max_fragment_bytes > wire::kFedMaxFragmentSize) {
    return Error(fmt::format("{}: max fragment size {} is outside [{}, {}]", where(),
                             s.max_fragment_bytes, wire::kFedMinFragmentSize,
                             wire::kFedMaxFragmentSize));
  }
  std::unique_ptr<NetworkInput> input(new NetworkInput(s));
  NetworkInput& in = *input;
  // A frame never straddles two chunks, so a chunk holds at least two of the largest frames;
  // a FED has at least two chunks so that one fills while the other drains.
  const std::size_t largest = (s.max_fragment_bytes + 7) / 8 * 8;
  // FEROL blocks may be as small as one word, and a fragment has at most kFerolMaxPacket + 1 of
  // them; the header of one more block is read before the input refuses it.
  const std::size_t blocks =
      std::min<std::size_t>(largest / 8, std::size_t{wire::kFerolMaxPacket} + 1) + 1;
  in.max_frame_ = s.framing == FedFraming::ferol ? largest + wire::kFerolHeaderSize * blocks
                                                 : kFedFrameHeaderSize + largest;
  in.chunk_size_ = std::clamp(s.buffer_bytes_per_fed / 4, 2 * in.max_frame_,
                              std::max(kMaxChunkSize, 2 * in.max_frame_));
  const std::size_t chunks = std::max<std::size_t>(2, s.buffer_bytes_per_fed / in.chunk_size_);
  const std::size_t slots = std::clamp(chunks * in.chunk_size_ / 256, kMinRingSlots, kMaxRingSlots);
  for (std::size_t i = 0; i < s.fed_ids.size(); ++i) {
    auto fed = std::make_unique<Fed>();
    fed->index = static_cast<std::uint32_t>(i);
    fed->id = s.fed_ids[i];
    fed->port = static_cast<std::uint16_t>(s.port + i);
    auto pool =
        core::BufferPool::create(fmt::format("{}.fed{}", s.name, fed->id), in.chunk_size_, chunks);
    if (!pool) return pool.error().context(fmt::format("{}: FED {}", where(), fed->id));
    fed->pool = std::move(*pool);
    fed->ring = std::make_unique<core::SpscRing<Fragment>>(slots);
    in.feds_.push_back(std::move(fed));
  }
  if (auto listening = in.listen_all(); !listening) return listening.error();
  in.thread_ = std::thread([&in] { in.run(); });
  return input;
}

Result<void> NetworkInput::listen_all() {
  epoll_fd_.reset(::epoll_create1(EPOLL_CLOEXEC));
  wake_fd_.reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!epoll_fd_ || !wake_fd_) {
    return Error(ErrorCode::internal,
                 fmt::format("{}: epoll/eventfd: {}", settings_.name, std::strerror(errno)));
  }
  epoll_event wake{};
  wake.events = EPOLLIN;
  wake.data.u64 = ~std::uint64_t{0};
  ::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, wake_fd_.get(), &wake);
  for (std::size_t i = 0; i < feds_.size(); ++i) {
    Fed& fed = *feds_[i];
    auto address = core::resolve(settings_.host, fed.port);
    if (!address) return address.error().context(settings_.name);
    auto listening = core::listen_tcp(*address, /*non_blocking=*/true, {}, /*backlog=*/4);
    if (!listening)
      return listening.error().context(fmt::format("{}: FED {}", settings_.name, fed.id));
    fed.listen_fd = std::move(*listening);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = i << 1;  // even: listening socket of FED i; odd: its connection
    if (::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, fed.listen_fd.get(), &ev) != 0) {
      return Error(ErrorCode::internal, fmt::format("{}: FED {}: epoll: {}", settings_.name, fed.id,
                                                    std::strerror(errno)));
    }
  }
  return ok();
}

// The descriptors close with their owners, after the I/O thread has stopped.
NetworkInput::~NetworkInput() {
  stop();
}

void NetworkInput::stop() {
  if (stopping_.exchange(true)) return;
  if (wake_fd_) {
    const std::uint64_t one = 1;
    (void)!::write(wake_fd_.get(), &one, sizeof one);
  }
  if (thread_.joinable()) thread_.join();
}

void NetworkInput::set_failure(std::string reason) {
  (void)failure_.set(std::move(reason));
}

std::string NetworkInput::failure() const {
  return failure_.reason();
}

std::size_t NetworkInput::max_super_fragment_size() const {
  return feds_.size() * ((settings_.max_fragment_bytes + 7) / 8 * 8);
}

FragmentSourceStats NetworkInput::stats() const {
  FragmentSourceStats s;
  s.events = events_.load(std::memory_order_relaxed);
  s.fragments = fragments_.load(std::memory_order_relaxed);
  s.bytes = bytes_.load(std::memory_order_relaxed);
  s.fragment_errors = errors_.load(std::memory_order_relaxed);
  s.crc_checked = crc_checked_.load(std::memory_order_relaxed);
  return s;
}

Produced NetworkInput::produce(std::uint64_t event, std::span<std::byte> out) {
  if (failure_.failed()) return {Produced::Status::failed, 0, 0};
  if (event != next_event_) {
    set_failure(
        fmt::format("{}: asked for the fragments at stream position {} while {} have been "
                    "taken (a RU bug: they are read in stream order)",
                    settings_.name, event, next_event_));
    return {Produced::Status::failed, 0, 0};
  }
  std::size_t total = 0;
  for (auto& fed : feds_) {
    if (!fed->has_front) {
      if (!fed->ring->try_pop(fed->front)) return {Produced::Status::not_ready, 0, 0};
      fed->has_front = true;
    }
    total += fed->front.size;
  }
  if (total > out.size()) return {Produced::Status::no_room, 0, 0};
  if (settings_.numbering == EventNumbering::cms) {
    if (std::string why = disagreement(); !why.empty()) {
      set_failure(why);
      return {Produced::Status::failed, 0, 0};
    }
  }
  std::uint32_t flags = 0;
  std::size_t offset = 0;
  for (auto& fed : feds_) {
    Fragment& f = fed->front;
    std::memcpy(out.data() + offset, f.chunk.data() + f.offset, f.size);
    offset += f.size;
    flags |= f.flags;
    f.chunk.reset();  // the chunk returns to the FED's pool with its last fragment
    fed->has_front = false;
  }
  ++next_event_;
  events_.fetch_add(1, std::memory_order_relaxed);
  bytes_.fetch_add(total, std::memory_order_relaxed);
  return {Produced::Status::ready, static_cast<std::uint32_t>(total), flags};
}

std::string NetworkInput::disagreement() const {
  const EventId& a = feds_.front()->front.id;
  for (const auto& fed : feds_) {
    const EventId& b = fed->front.id;
    if (b == a) continue;
    return fmt::format("{}: the FEDs disagree on an event's number: FED {} has {}, FED {} {}",
                       settings_.name, feds_.front()->id, event_name(a), fed->id, event_name(b));
  }
  return {};
}

Result<std::unique_ptr<FragmentSource>> make_network_input(const NetworkInputSettings& settings) {
  auto input = NetworkInput::create(settings);
  if (!input) return input.error();
  return std::unique_ptr<FragmentSource>(std::move(*input));
}

}  // namespace daqflow::apps::fed
