// The send side of the engine: work from the endpoint, control headers, send completions.
#include <string>

#include "daqflow/core/clock.hpp"
#include "mpi_domain.hpp"

namespace daqflow::transport::mpi {

std::size_t Domain::take_work(Local& local) {
  std::size_t taken = 0;
  Work work;
  for (;;) {
    if (local.held) {
      if (!post_send(local, *local.held)) return taken;
      local.held.reset();
      ++taken;
    }
    if (local.state != Local::State::live || !local.channel->work.try_pop(work)) return taken;
    ++taken;
    PeerLink& link = local.peers[work.peer];
    switch (work.kind) {
      case Work::Kind::send:
        if (!post_send(local, work)) {
          local.held = std::move(work);
          return taken;
        }
        break;
      case Work::Kind::connect:
        if (link.state == PeerLink::State::unknown || link.state == PeerLink::State::closed) {
          link.state = PeerLink::State::hello_sent;
          send_control(local, work.peer, wire::MessageType::hello, kHello);
        }
        break;
      case Work::Kind::close:
        local.state = Local::State::closing;
        local.close_deadline_ns = work.deadline_ns;
        return taken;
      case Work::Kind::abort:
        // A crash as far as the peers can tell: no flush, an abort instead of a bye.
        for (AppIndex p = 0; p < local.peers.size(); ++p) {
          PeerLink& other = local.peers[p];
          if (other.state == PeerLink::State::open || other.state == PeerLink::State::hello_sent) {
            send_control(local, p, wire::MessageType::bye, kAbort);
            other.state = PeerLink::State::closed;
          }
        }
        local.state = Local::State::dead;
        return taken;
    }
  }
}

// Posts one message: false when the peer's queue is full (it is then retried).
bool Domain::post_send(Local& local, Work& work) {
  PeerLink& link = local.peers[work.peer];
  if (link.state != PeerLink::State::open) {
    // The peer went away after the endpoint posted: the endpoint forgets these sends when it
    // learns of the closure.
    work.message.clear();
    return true;
  }
  if (link.sends == nullptr) {
    link.sends = std::make_unique<SendQueue>(local.channel->options.pipeline_depth);
  }
  SendQueue& q = *link.sends;
  if (q.full()) return false;
  const std::uint32_t index = (q.head + q.count) % q.slots.size();
  SendSlot& slot = q.slots[index];
  wire::MessageHeader h;
  h.type = work.message.type;
  h.flags = work.message.flags;
  if (local.channel->options.payload_crc && work.size > 0) h.flags |= wire::kFlagPayloadCrc;
  h.source = local.self;
  h.destination = work.peer;
  h.sequence = work.sequence;
  h.tag = work.message.tag;
  h.payload_size = work.size;
  h.crc32c = work.crc;
  wire::encode(h, slot.header);
  slot.sequence = work.sequence;
  slot.size = work.size;
  slot.epoch = work.epoch;
  slot.message = std::move(work.message);
  const int rank = rank_of_[work.peer];
  MPI_Request* requests = &q.requests[2 * std::size_t{index}];
  if (work.size == 0) {
    // Nothing follows: the header itself is synchronous, so that it back-pressures too.
    MPI_Issend(slot.header.data(), wire::kHeaderSize, MPI_BYTE, rank, tags_.header(work.peer),
               comm_, &requests[0]);
  } else {
    MPI_Isend(slot.header.data(), wire::kHeaderSize, MPI_BYTE, rank, tags_.header(work.peer), comm_,
              &requests[0]);
    const int tag = tags_.payload(local.self, work.peer);
    std::array<MPI_Aint, kMaxSegments> displacements{};
    std::array<int, kMaxSegments> lengths{};
    std::byte* first = nullptr;
    int pieces = 0;
    for (const Segment& s : slot.message.pieces()) {
      if (s.length == 0) continue;
      if (first == nullptr) first = s.bytes().data();
      MPI_Get_address(s.bytes().data(), &displacements[pieces]);
      lengths[pieces] = static_cast<int>(s.length);
      ++pieces;
    }
    if (pieces == 1) {
      // One piece: straight from the application's buffer (MPI may send it with a single copy).
      MPI_Issend(first, lengths[0], MPI_BYTE, rank, tag, comm_, &requests[1]);
    } else {
      // Several pieces: one message described by a datatype, gathered by MPI.
      MPI_Datatype gather = MPI_DATATYPE_NULL;
      MPI_Type_create_hindexed(pieces, lengths.data(), displacements.data(), MPI_BYTE, &gather);
      MPI_Type_commit(&gather);
      MPI_Issend(MPI_BOTTOM, 1, gather, rank, tag, comm_, &requests[1]);
      MPI_Type_free(&gather);
    }
  }
  ++q.count;
  ++in_flight_;
  if (!link.busy) {
    link.busy = true;
    local.busy.push_back(work.peer);
  }
  return true;
}

void Domain::send_control(Local& local, AppIndex peer, wire::MessageType type, std::uint64_t tag) {
  wire::MessageHeader h;
  h.type = type;
  h.source = local.self;
  h.destination = peer;
  h.tag = tag;
  ControlSend& c = controls_.emplace_back();
  wire::encode(h, c.header);
  MPI_Isend(c.header.data(), wire::kHeaderSize, MPI_BYTE, rank_of_[peer], tags_.header(peer), comm_,
            &c.request);
}

void Domain::test_controls() {
  for (ControlSend& c : controls_) {
    if (c.request == MPI_REQUEST_NULL) continue;
    int flag = 0;
    MPI_Test(&c.request, &flag, MPI_STATUS_IGNORE);
  }
  while (!controls_.empty() && controls_.front().request == MPI_REQUEST_NULL) controls_.pop_front();
}

std::size_t Domain::complete_sends(Local& local) {
  std::size_t done = 0;
  for (std::size_t k = 0; k < local.busy.size();) {
    const AppIndex peer = local.busy[k];
    PeerLink& link = local.peers[peer];
    SendQueue& q = *link.sends;
    const int capacity = static_cast<int>(q.requests.size());
    (void)test_ring(polling_, q.requests.data(), q.statuses.data(), capacity,
                    static_cast<int>(2 * q.head), static_cast<int>(2 * q.count), scratch_);
    // In posting order: a slot is done when both its requests are.
    while (q.count > 0 && q.requests[2 * std::size_t{q.head}] == MPI_REQUEST_NULL &&
           q.requests[2 * std::size_t{q.head} + 1] == MPI_REQUEST_NULL) {
      SendSlot& slot = q.slots[q.head];
      Event e;
      e.kind = Event::Kind::send_done;
      e.peer = peer;
      e.epoch = slot.epoch;
      e.sequence = slot.sequence;
      e.size = slot.size;
      e.message.type = slot.message.type;
      e.message.tag = slot.message.tag;
      slot.message.clear();
      emit(local, std::move(e));
      q.head = (q.head + 1) % q.slots.size();
      --q.count;
      --in_flight_;
      ++done;
    }
    if (q.count == 0) {
      link.busy = false;
      local.busy[k] = local.busy.back();
      local.busy.pop_back();
    } else {
      ++k;
    }
  }
  return done;
}

}  // namespace daqflow::transport::mpi
