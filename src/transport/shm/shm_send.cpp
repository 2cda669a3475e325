// The shm endpoint's send side: descriptors into the receiver's ring, loans and their return.

#include <cstring>
#include <limits>

#include "daqflow/wire/crc32c.hpp"
#include "shm_endpoint.hpp"
#include "shm_futex.hpp"
#include "transport/detail/fence.hpp"
#include "transport/detail/message_checks.hpp"

namespace daqflow::transport::shm {

int ShmEndpoint::find_pool(const core::BufferPool* pool) const {
  for (std::size_t i = 0; i < send_pools_.size(); ++i) {
    // A retired entry's address may have been reused by another pool.
    if (send_pools_[i].pool == pool && send_pools_[i].alive->load(std::memory_order_acquire)) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

int ShmEndpoint::find_pool_number(std::uint32_t number) const {
  // Returns come in runs from one pool.
  if (last_pool_ < send_pools_.size() && send_pools_[last_pool_].number == number) {
    return static_cast<int>(last_pool_);
  }
  for (std::size_t i = 0; i < send_pools_.size(); ++i) {
    if (send_pools_[i].number == number) return static_cast<int>(i);
  }
  return -1;
}

void ShmEndpoint::lend(Peer& p, std::size_t pool, core::Buffer& buffer, std::uint32_t slot) {
  SendPool& sp = send_pools_[pool];
  if (sp.loans[slot]++ == 0) sp.lent[slot] = std::move(buffer);
  ++p.loans[pool][slot];
}

bool ShmEndpoint::ring_room_now(Peer& p, std::size_t n) {
  p.head_cache = p.out->head.load(std::memory_order_acquire);
  return p.tail + n + 1 - p.head_cache <= kRingCells;
}

SendStatus ShmEndpoint::admit_slow(AppIndex index) {
  Peer& p = peers_[index];
  if (p.state != Peer::State::open && !resolve(index)) {
    return p.state == Peer::State::closed ? SendStatus::closed : SendStatus::not_connected;
  }
  if (p.header->state.load(std::memory_order_acquire) != SegmentState::open) {
    return SendStatus::closed;
  }
  if (p.posted - p.reported >= options_.pipeline_depth) {
    stats_.back_pressure(index);
    return SendStatus::back_pressure;
  }
  return SendStatus::ok;
}

SendStatus ShmEndpoint::post_send(AppIndex index, Message& message) {
  const auto [checked, size] =
      detail::check_post(closed_, index, peers_.size(), message, options_.max_message_size);
  if (checked != SendStatus::ok) return checked;
  if (const SendStatus status = admit(index); status != SendStatus::ok) return status;
  Peer& p = peers_[index];
  // Small payloads are copied into the ring. Larger ones go by reference: zero copy when every
  // piece lies in one of our shared pools, otherwise one copy into the bounce pool.
  if (size > 0 && size <= kInlineMax) {
    const SendStatus status = post_inline(
        index, p, message.type, message.flags, message.tag, size,
        message.segment_count == 1 ? std::span<const std::byte>(message.segments[0].bytes())
                                   : std::span<const std::byte>(),
        [&](auto&& f) {
          for (const Segment& s : message.pieces()) {
            if (s.length > 0) f(std::span<const std::byte>(s.bytes()));  // may have no buffer
          }
        });
    if (status == SendStatus::ok) message.clear();
    return status;
  }
  return post_by_reference(index, p, message, size);
}

SendStatus ShmEndpoint::post_copy(AppIndex index, const CopyMessage& message) {
  const std::size_t size = message.payload.size();
  if (closed_ || index >= peers_.size() || size == 0 || size > copy_limit_ ||
      !detail::sendable(message.type, message.flags)) {
    return SendStatus::invalid;
  }
  if (const SendStatus status = admit(index); status != SendStatus::ok) return status;
  return post_inline(index, peers_[index], message.type, message.flags, message.tag,
                     static_cast<std::uint32_t>(size), message.payload,
                     [&](auto&& f) { f(message.payload); });
}

SendStatus ShmEndpoint::post_by_reference(AppIndex index, Peer& p, Message& message,
                                          std::uint32_t size) {
  std::array<int, kMaxSegments> pool_of;  // [0, pieces) set below
  std::size_t pieces = 0;
  bool shared = true;
  core::Buffer bounce;
  for (const Segment& s : message.pieces()) {
    if (s.length == 0) continue;
    pool_of[pieces] = find_pool(s.buffer.pool());
    shared = shared && pool_of[pieces] >= 0;
    ++pieces;
  }
  if (!shared) {
    bounce = bounce_->acquire();
    if (!bounce) {
      stats_.back_pressure(index);
      return SendStatus::back_pressure;
    }
    pieces = 1;
  }
  // An entry is one aligned line: from an odd position, a pad cell first.
  const std::size_t pad = p.tail % kCellsPerEntry;
  const std::size_t n = pad + entry_cells(pieces);
  if (!ring_room(p, n)) {
    stats_.back_pressure(index);
    return SendStatus::back_pressure;
  }

  Channel& ch = *p.out;
  if (pad != 0) ch.cell(p.tail)[0] = static_cast<std::byte>(EntryKind::pad);
  const std::uint64_t first = p.tail + pad;  // the entry's position
  Entry& e = ch.entry(first);
  e.kind = EntryKind::message;
  e.type = static_cast<std::uint8_t>(message.type);
  e.flags = message.flags;
  e.pieces = static_cast<std::uint8_t>(size == 0 ? 0 : pieces);
  e.reserved[0] = static_cast<std::uint8_t>(options_.payload_crc ? kHasCrc : 0);
  e.size = size;
  e.tag = message.tag;
  e.sequence = p.posted;
  std::uint32_t crc = 0;
  if (!shared) {
    std::size_t at = 0;
    for (const Segment& s : message.pieces()) {
      if (s.length == 0) continue;
      std::memcpy(bounce.data() + at, s.bytes().data(), s.length);
      at += s.length;
    }
    if (options_.payload_crc) crc = wire::crc32c({bounce.data(), size});
  }
  std::size_t k = 0;
  auto ref_at = [&](std::size_t i) -> SegmentRef& {
    if (i < kInlineRefs) return e.refs[i];
    const std::size_t entry = 1 + (i - kInlineRefs) / kRefsPerEntry;
    auto* more = reinterpret_cast<SegmentRef*>(&ch.entry(first + entry * kCellsPerEntry));
    return more[(i - kInlineRefs) % kRefsPerEntry];
  };
  if (!shared && size > 0) {
    ref_at(0) = SegmentRef{send_pools_[0].number, bounce.index(), 0, size};
    lend(p, 0, bounce, bounce.index());
  } else if (shared) {
    for (std::uint8_t i = 0; i < message.segment_count; ++i) {
      Segment& s = message.segments[i];
      if (s.length == 0) continue;
      const auto pool = static_cast<std::size_t>(pool_of[k]);
      if (options_.payload_crc) crc = wire::crc32c(s.bytes(), crc);
      ref_at(k++) = SegmentRef{send_pools_[pool].number, s.buffer.index(), s.offset, s.length};
      lend(p, pool, s.buffer, s.buffer.index());
    }
  }
  if (index == corrupt_next_) {
    crc ^= 1u;
    corrupt_next_ = wire::kNoApplication;
  }
  e.crc = crc;
  posted(index, p, message.type, message.tag, n, size);
  message.clear();
  return SendStatus::ok;
}

template <class ForEachPiece>
SendStatus ShmEndpoint::post_inline(AppIndex index, Peer& p, wire::MessageType type,
                                    std::uint16_t flags, std::uint64_t tag, std::uint32_t size,
                                    std::span<const std::byte> whole,
                                    const ForEachPiece& for_each_piece) {
  const std::size_t n = inline_cells(size);
  if (!ring_room(p, n)) {
    stats_.back_pressure(index);
    return SendStatus::back_pressure;
  }
  Channel& ch = *p.out;
  const std::size_t cell = p.tail % kRingCells;
  std::byte* head_cell = ch.cell(p.tail);
  // The payload, then the 32-byte head. Neither is read before ring_doorbells() publishes the
  // tail.
  std::uint32_t crc = 0;
  // Streamed while the pipeline to the peer holds a few messages already: the receiver then has
  // others to read first, and the sender's rate is what counts. A lone message (a request, a
  // round trip) is stored through the cache, where the receiving core takes it from ours rather
  // than from memory: the 64-byte round trip stays at 0.4 us instead of 0.9 here.
  const bool fits = cell + n <= kRingCells;  // does not wrap around the ring's end
  const bool stream = kStreams && p.posted - p.reported >= kStreamFrom && !whole.empty() && fits;
  if (stream) {
    stream_small(head_cell + kCell, whole.data(), whole.size());
  } else if (fits) {
    std::byte* to = head_cell + kCell;
    for_each_piece([&](std::span<const std::byte> piece) {
      copy_small(to, piece.data(), piece.size());
      to += piece.size();
    });
  } else {
    const InlineBytes ring = inline_bytes(ch.ring, p.tail);
    std::size_t at = 0;
    for_each_piece([&](std::span<const std::byte> piece) {
      ring.put(at, piece.data(), piece.size());
      at += piece.size();
    });
  }
  if (options_.payload_crc) {
    for_each_piece([&](std::span<const std::byte> piece) { crc = wire::crc32c(piece, crc); });
  }
  if (index == corrupt_next_) {
    crc ^= 1u;
    corrupt_next_ = wire::kNoApplication;
  }
  const auto bits = static_cast<std::uint8_t>((options_.payload_crc ? kHasCrc : 0) | kInline);
  const HeadWords head =
      head_words(EntryKind::message, type, flags, bits, size, crc, tag, p.posted);
  if (stream) {
    stream_head(head_cell, head);
    streamed_ = true;
  } else {
    store_head(head_cell, head);
  }
  posted(index, p, type, tag, n, size);
  return SendStatus::ok;
}

void ShmEndpoint::complete_sends(AppIndex index, detail::Emitter& emit) {
  Peer& p = peers_[index];
  if (p.reported == p.posted) return;
  const std::uint64_t head = p.out->head.load(std::memory_order_acquire);
  p.head_cache = head;
  if (options_.coalesce_send_done) {
    // One completion for every message the receiver has taken since the last one.
    if (!emit.room()) return;
    std::uint32_t count = 0;
    std::uint64_t bytes = 0;
    const SentInfo* last = nullptr;
    // At most pipeline_depth messages are unreported: count fits its 32 bits.
    while (p.reported < p.posted) {
      const SentInfo& s = p.sent[p.reported & sent_mask_];
      if (s.end > head || bytes + s.size > std::numeric_limits<std::uint32_t>::max()) break;
      bytes += s.size;
      ++count;
      ++p.reported;
      last = &s;
    }
    if (count == 0) return;
    emit.send_done_run(index, last->sequence, count, static_cast<std::uint32_t>(bytes), last->type,
                       last->tag);
    stats_.sent(index, bytes, count);
    return;
  }
  while (p.reported < p.posted && emit.room()) {
    const SentInfo& s = p.sent[p.reported & sent_mask_];
    if (s.end > head) break;
    emit.send_done(index, s.sequence, s.size, s.type, 0, s.tag);
    ++p.reported;
    stats_.sent(index, s.size);
  }
}

bool ShmEndpoint::take_returns(AppIndex index, detail::Emitter& emit) {
  Peer& p = peers_[index];
  Channel& ch = *p.out;
  const std::uint64_t tail = ch.return_tail.load(std::memory_order_acquire);
  std::uint64_t head = ch.return_head.load(std::memory_order_relaxed);
  if (head == tail) return true;
  bool bad = tail - head > kReturnEntries;
  for (; !bad && head != tail; ++head) {
    const Return r = ch.returns[head % kReturnEntries];
    const int pool = find_pool_number(r.pool);
    if (pool < 0 || r.slot >= p.loans[static_cast<std::size_t>(pool)].size() || r.count == 0 ||
        p.loans[static_cast<std::size_t>(pool)][r.slot] < r.count) {
      bad = true;
      break;
    }
    last_pool_ = static_cast<std::size_t>(pool);
    SendPool& sp = send_pools_[static_cast<std::size_t>(pool)];
    p.loans[static_cast<std::size_t>(pool)][r.slot] -= r.count;
    sp.loans[r.slot] -= r.count;
    if (sp.loans[r.slot] == 0) sp.lent[r.slot].reset();
  }
  if (bad) {
    stats_.rejected.add_single_writer();
    peer_lost(index, SegmentState::aborted, "peer returned buffers it was not lent", &emit);
    return false;
  }
  ch.return_head.store(head, std::memory_order_release);
  return true;
}

void ShmEndpoint::write_bye(Peer& p) {
  Channel& ch = *p.out;
  ch.cell(p.tail)[0] = static_cast<std::byte>(EntryKind::bye);
  ++p.tail;
  if (streamed_) sfence_streams();  // streamed_ stays: other peers' tails are not out yet
  p.published = p.tail;
  ch.tail.store(p.tail, std::memory_order_release);
  ch.sender_state.store(SenderState::closed, std::memory_order_release);
}

void ShmEndpoint::ring_doorbells() {
  if (doorbells_.empty()) return;
  if (streamed_) {
    sfence_streams();  // the messages before the tails that announce them
    streamed_ = false;
  }
  for (const AppIndex index : doorbells_) {
    Peer& p = peers_[index];
    if (p.out != nullptr && p.published != p.tail) {
      p.published = p.tail;
      p.out->tail.store(p.tail, std::memory_order_release);
    }
  }
  // Pairs with the fence in wait(): either the peer sees our writes before it sleeps, or we see
  // that it sleeps and wake it.
  detail::full_fence();
  for (const AppIndex index : doorbells_) {
    Peer& p = peers_[index];
    p.doorbell = false;
    SegmentHeader* h = p.header;
    if (h == nullptr || h->sleeping.load(std::memory_order_relaxed) == 0) continue;
    if (h->sleeping.exchange(0, std::memory_order_acq_rel) == 0) continue;
    h->doorbell.fetch_add(1, std::memory_order_release);
    futex_wake_all(h->doorbell);
  }
  doorbells_.clear();
}

}  // namespace daqflow::transport::shm
