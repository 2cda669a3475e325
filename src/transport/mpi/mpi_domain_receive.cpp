// The receive side of the engine: header receives, payload receives in header order, delivery.
#include <limits>

#include "mpi_domain.hpp"
#include "transport/detail/stats_counters.hpp"

namespace daqflow::transport::mpi {

std::size_t Domain::complete_headers(Local& local) {
  const int capacity = static_cast<int>(local.header_requests.size());
  // Header receives wait for whoever sends next: MPI_Testall would wait for all of them at once,
  // which may never happen, so that strategy tests them one by one.
  const Polling mode = polling_ == Polling::testall ? Polling::test : polling_;
  (void)test_ring(mode, local.header_requests.data(), local.header_statuses.data(), capacity,
                  local.header_head, capacity, scratch_);
  std::size_t done = 0;
  // In posting order, which is the order MPI matched them in; each is posted again at once and so
  // goes to the back of that order.
  while (local.header_requests[local.header_head] == MPI_REQUEST_NULL) {
    const int i = local.header_head;
    on_header(local, local.header_buffers[i], local.header_statuses[i]);
    MPI_Irecv(local.header_buffers[i].data(), wire::kHeaderSize, MPI_BYTE, MPI_ANY_SOURCE,
              tags_.header(local.self), comm_, &local.header_requests[i]);
    local.header_head = (i + 1) % capacity;
    ++done;
  }
  return done;
}

void Domain::on_header(Local& local, const HeaderBytes& bytes, const MPI_Status& status) {
  wire::MessageHeader h;
  const auto decoded = wire::decode(bytes, std::numeric_limits<std::uint32_t>::max(), h);
  const bool from_known = decoded == wire::DecodeStatus::ok && h.source < rank_of_.size() &&
                          rank_of_[h.source] == status.MPI_SOURCE && h.destination == local.self;
  if (!from_known) {
    // Nothing about it can be trusted, not even whether a payload follows.
    if (local.channel != nullptr) {
      local.channel->rejected.add_single_writer();
    }
    return;
  }
  PeerLink& link = local.peers[h.source];
  const bool live = local.state == Local::State::live;
  auto open = [&] {
    if (link.state == PeerLink::State::open) return;
    link.state = PeerLink::State::open;
    Event e;
    e.kind = Event::Kind::opened;
    e.peer = h.source;
    emit(local, std::move(e));
  };
  Inbound in;
  in.rank = status.MPI_SOURCE;
  in.header = h;
  switch (h.type) {
    case wire::MessageType::hello:
      if (!live) {
        send_control(local, h.source, wire::MessageType::bye, kBye);
      } else {
        if (h.tag == kHello) send_control(local, h.source, wire::MessageType::hello, kWelcome);
        open();
      }
      return;
    case wire::MessageType::bye:
      if (local.state == Local::State::dead || link.state == PeerLink::State::closed) return;
      link.state = PeerLink::State::closed;
      // After the messages that came before it.
      in.what = h.tag == kAbort ? Inbound::What::failed : Inbound::What::closed;
      in.reason = "peer aborted without bye";
      local.stalled.push(std::move(in));
      return;
    default:
      break;
  }
  in.what = Inbound::What::discard;
  if (live && link.state != PeerLink::State::closed) {
    if (h.payload_size > local.channel->options.max_message_size) {
      local.channel->rejected.add_single_writer();
      link.state = PeerLink::State::closed;
      Inbound refused;
      refused.what = Inbound::What::failed;
      refused.reason = "message larger than max_message_size";
      refused.header = h;
      local.stalled.push(std::move(in));
      local.stalled.push(std::move(refused));
      return;
    }
    open();
    in.what = Inbound::What::deliver;
  }
  local.stalled.push(std::move(in));
}

std::size_t Domain::post_inbound(Local& local) {
  const int capacity = static_cast<int>(local.posted.size());
  std::size_t posted = 0;
  while (!local.stalled.empty() && local.posted_count < capacity) {
    Inbound& in = local.stalled.front();
    if (in.what == Inbound::What::deliver && local.state != Local::State::live) {
      in.what = Inbound::What::discard;
    }
    const int slot = (local.posted_head + local.posted_count) % capacity;
    MPI_Request& request = local.posted_requests[slot];
    const std::uint32_t size = in.header.payload_size;
    const bool payload =
        size > 0 && (in.what == Inbound::What::deliver || in.what == Inbound::What::discard);
    if (payload) {
      std::byte* into = nullptr;
      if (in.what == Inbound::What::deliver) {
        in.buffer = local.channel->pool->acquire();
        if (!in.buffer) {
          if (!local.pool_dry) {
            local.pool_dry = true;
            local.channel->recv_stalls.add_single_writer();
          }
          break;
        }
        local.pool_dry = false;
        into = in.buffer.data();
      } else {
        in.scratch = std::make_unique<std::byte[]>(size);
        into = in.scratch.get();
      }
      MPI_Irecv(into, static_cast<int>(size), MPI_BYTE, in.rank,
                tags_.payload(in.header.source, local.self), comm_, &request);
      ++in_flight_;
    }
    local.posted[slot] = std::move(in);
    local.stalled.pop();
    ++local.posted_count;
    ++posted;
  }
  return posted;
}

std::size_t Domain::deliver_inbound(Local& local) {
  const int capacity = static_cast<int>(local.posted.size());
  (void)test_ring(polling_, local.posted_requests.data(), local.posted_statuses.data(), capacity,
                  local.posted_head, local.posted_count, scratch_);
  std::size_t done = 0;
  while (local.posted_count > 0 && local.posted_requests[local.posted_head] == MPI_REQUEST_NULL) {
    Inbound in = std::move(local.posted[local.posted_head]);
    local.posted[local.posted_head] = Inbound{};
    local.posted_head = (local.posted_head + 1) % capacity;
    --local.posted_count;
    ++done;
    const wire::MessageHeader& h = in.header;
    const bool payload = h.payload_size > 0 &&
                         (in.what == Inbound::What::deliver || in.what == Inbound::What::discard);
    if (payload) --in_flight_;
    Event e;
    e.peer = h.source;
    switch (in.what) {
      case Inbound::What::discard:
        continue;
      case Inbound::What::closed:
        e.kind = Event::Kind::closed;
        break;
      case Inbound::What::failed:
        e.kind = Event::Kind::failed;
        e.reason = in.reason;
        break;
      case Inbound::What::deliver:
        if (local.state != Local::State::live) continue;
        if (payload &&
            wire::verify_payload(h, {in.buffer.data(), h.payload_size}) != wire::DecodeStatus::ok) {
          local.channel->rejected.add_single_writer();
          local.peers[h.source].state = PeerLink::State::closed;
          e.kind = Event::Kind::failed;
          e.reason = "payload CRC mismatch";
          break;
        }
        e.kind = Event::Kind::recv;
        e.sequence = h.sequence;
        e.size = h.payload_size;
        e.message.type = h.type;
        e.message.flags = h.flags;
        e.message.tag = h.tag;
        if (payload) e.message.add(std::move(in.buffer), 0, h.payload_size);
        break;
    }
    emit(local, std::move(e));
  }
  return done;
}

}  // namespace daqflow::transport::mpi
