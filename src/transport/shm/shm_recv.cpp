// The shm endpoint's receive side and poll(): descriptors in, buffers lent to the application,
// loans returned once the application dropped them.

#include <algorithm>
#include <cstring>

#include "daqflow/wire/crc32c.hpp"
#include "shm_endpoint.hpp"

namespace daqflow::transport::shm {

namespace {

// What a descriptor says, copied out of shared memory before anything of it is trusted.
struct Descriptor {
  Entry entry;
  std::array<SegmentRef, kMaxSegments> refs;
  std::size_t cells = 0;
};
// Whether a message's descriptor can be believed: a message entry of known type and flags, its
// cells within what the sender published (a by-reference one on an entry boundary), its size
// within bounds, the next sequence number; an inline one with a payload and no pieces.
bool well_formed(const Entry& e, bool in_ring, std::uint64_t cells, std::uint64_t head,
                 std::uint64_t tail, std::uint64_t expected_sequence,
                 std::uint32_t max_message_size) {
  const auto type = static_cast<wire::MessageType>(e.type);
  if (e.kind != EntryKind::message || e.pieces > kMaxSegments || cells > tail - head) return false;
  if ((!in_ring && head % kCellsPerEntry != 0) || !wire::is_known(type)) return false;
  if ((e.flags & ~wire::kApplicationFlags) != 0 || e.size > max_message_size) return false;
  if (e.sequence != expected_sequence) return false;
  return !in_ring || (e.pieces == 0 && e.size != 0 && e.size <= kInlineMax);
}

// The piece references of the by-reference message at head (its first cell `cell`): those of
// its first entry, then those of the entries that follow it.
void read_refs(Channel& ch, std::uint64_t head, const std::byte* cell, Descriptor& d) {
  std::memcpy(&d.entry.refs, cell + kHeadBytes, sizeof(d.entry.refs));
  for (std::size_t i = 0; i < d.entry.pieces; ++i) {
    if (i < kInlineRefs) {
      d.refs[i] = d.entry.refs[i];
    } else {
      const std::size_t entry = 1 + (i - kInlineRefs) / kRefsPerEntry;
      const auto* more =
          reinterpret_cast<const SegmentRef*>(&ch.entry(head + entry * kCellsPerEntry));
      std::memcpy(&d.refs[i], &more[(i - kInlineRefs) % kRefsPerEntry], sizeof(SegmentRef));
    }
  }
}

// The next completion: the message entry e from peer, without its pieces yet.
Completion& recv_completion(detail::Emitter& emit, AppIndex peer, const Entry& e) {
  Completion& c = emit.next();
  c.kind = Completion::Kind::recv;
  c.peer = peer;
  c.sequence = e.sequence;
  c.size = e.size;
  c.reason = {};
  c.message.clear();
  c.message.type = static_cast<wire::MessageType>(e.type);
  c.message.flags = e.flags;
  c.message.tag = e.tag;
  return c;
}

// An inline payload out of the ring into to (a copy buffer: kInlineMax bytes, rounded up to
// whole 32-byte chunks). Fixed-size chunks where the message does not wrap: a variable-length
// copy of a few dozen bytes costs more to start than to do.
void copy_inline(Channel& ch, std::uint64_t position, std::size_t n, std::byte* to,
                 std::size_t size) {
  constexpr std::size_t kChunk = kCell;
  static_assert(kInlineMax % kChunk == 0);
  if (position % kRingCells + n > kRingCells) {
    inline_bytes(ch.ring, position).get(to, size);
    return;
  }
  const std::byte* from = ch.cell(position) + kCell;
  for (std::size_t at = 0; at < size; at += kChunk) std::memcpy(to + at, from + at, kChunk);
}

}  // namespace

std::size_t ShmEndpoint::poll(std::span<Completion> out) {
  detail::Emitter emit(out, events_);
  if (closed_) return emit.produced();
  // The thread that polls takes the copy buffers and, mostly, gets them back: without a locked
  // instruction either way (a no-op once bound).
  ring_copies_->bind_to_this_thread();
  ring_doorbells();
  if (header_.changes.load(std::memory_order_acquire) != seen_changes_) rescan_channels();
  for (std::size_t k = waiting_.size(); k-- > 0;) (void)resolve(waiting_[k]);
  for (std::size_t k = linked_.size(); k-- > 0;) {
    const AppIndex index = linked_[k];
    if (take_returns(index, emit)) complete_sends(index, emit);
  }
  reap();
  for (std::size_t k = active_.size(); k-- > 0;) receive(active_[k], emit);
  check_peers(emit);
  ring_doorbells();
  return emit.produced();
}

ShmEndpoint::Mirror* ShmEndpoint::mirror(Peer& p, AppIndex index, std::uint32_t number) {
  if (p.last_mirror != nullptr && p.last_mirror->number == number) return p.last_mirror;
  for (auto& m : p.mirrors) {
    if (m->number == number) return p.last_mirror = m.get();
  }
  auto mapping = Mapping::open(names_.of(index, "p" + std::to_string(number)), SegmentKind::pool);
  if (!mapping) return nullptr;
  const SegmentHeader& h = (*mapping)->header();
  if (h.count == 0 || h.stride == 0 || h.stride % core::kCacheLine != 0 ||
      h.count > (h.bytes - h.data_offset) / h.stride) {
    return nullptr;
  }
  auto m = std::make_unique<Mirror>();
  m->number = number;
  const std::span<std::byte> region{(*mapping)->base() + h.data_offset, h.stride * h.count};
  auto pool = core::BufferPool::over((*mapping)->name(), region, h.stride, h.count);
  if (!pool) return nullptr;
  m->mapping = std::move(*mapping);
  m->pool = std::move(*pool);
  m->held.resize(h.count);
  m->loans.assign(h.count, 0);
  m->ends.assign(h.count, 0);
  for (std::size_t i = 0; i < h.count; ++i) {
    core::Buffer b = m->pool->acquire();
    m->held[b.index()] = std::move(b);
  }
  p.mirrors.push_back(std::move(m));
  return p.last_mirror = p.mirrors.back().get();
}

std::string_view ShmEndpoint::map_pieces(Peer& p, AppIndex index, const Entry& e,
                                         const std::array<SegmentRef, kMaxSegments>& refs,
                                         std::array<Mirror*, kMaxSegments>& mirrors) {
  std::uint64_t total = 0;
  std::uint32_t crc = 0;
  const bool check_crc = (e.reserved[0] & kHasCrc) != 0;
  for (std::size_t i = 0; i < e.pieces; ++i) {
    const SegmentRef& r = refs[i];
    mirrors[i] = mirror(p, index, r.pool);
    if (mirrors[i] == nullptr) return "cannot map the peer's buffer pool";
    if (r.slot >= mirrors[i]->held.size() ||
        std::uint64_t{r.offset} + r.length > mirrors[i]->pool->buffer_size()) {
      return "malformed descriptor from peer";
    }
    if (check_crc) crc = wire::crc32c({mirrors[i]->held[r.slot].data() + r.offset, r.length}, crc);
    total += r.length;
  }
  if (total != e.size) return "malformed descriptor from peer";
  if (check_crc && crc != e.crc) return "payload CRC32C mismatch";
  return {};
}

void ShmEndpoint::note_loan(AppIndex index, const Peer& p, Mirror& m, std::uint32_t slot) {
  lent_.push_back(Lent{index, p.epoch, &m, slot});
  const std::uint32_t now = held_slots_.load(std::memory_order_relaxed) + 1;
  held_slots_.store(now, std::memory_order_relaxed);
  if (now > held_high_water_.load(std::memory_order_relaxed)) {
    held_high_water_.store(now, std::memory_order_relaxed);
  }
}

bool ShmEndpoint::holds_every_message() {
  const auto let_go = [](const HeldMessage& h) {
    for (std::uint32_t i = 0; i < h.pieces; ++i) {
      if (h.mirror[i]->ends[h.slot[i]] == h.ends[i]) return false;
    }
    return true;
  };
  // Applications mostly let go in the order messages came: the oldest are forgotten as they go,
  // and the whole list is looked through only when it could be full.
  while (!held_messages_.empty() && let_go(held_messages_.front())) held_messages_.pop_front();
  if (held_messages_.size() < options_.recv_buffers) return false;
  std::erase_if(held_messages_, let_go);
  if (held_messages_.size() < options_.recv_buffers) return false;
  // Counted again only when it may have reached the bound: a message lent adds a group at most,
  // and only a loan that ended (reap()) takes one away or unties two.
  if (!loans_ended_) {
    if (lent_since_count_ == 0) return groups_counted_ >= options_.recv_buffers;
    if (groups_counted_ + lent_since_count_ < options_.recv_buffers) return false;
  }
  groups_counted_ = messages_surely_held();
  lent_since_count_ = 0;
  loans_ended_ = false;
  return groups_counted_ >= options_.recv_buffers;
}

// A slot goes back when the application has let go of every message in it, so a message counts
// as held while any message sharing one of its slots is: a sender that cuts many messages from
// one buffer (a readout's chunk) would make an application that keeps only the newest of them
// look as if it held them all, and receiving would wait for it forever. Of every group of
// messages tied together by shared slots, the application surely holds one; it is that count
// that receiving waits on.
std::size_t ShmEndpoint::messages_surely_held() {
  held_pieces_.clear();
  held_groups_.resize(held_messages_.size());
  for (std::uint32_t m = 0; m < held_messages_.size(); ++m) {
    const HeldMessage& h = held_messages_[m];
    held_groups_[m] = m;
    for (std::uint32_t i = 0; i < h.pieces; ++i) {
      // A piece whose slot went back (and may be lent again) ties it to nothing.
      if (h.mirror[i]->ends[h.slot[i]] != h.ends[i]) continue;
      held_pieces_.push_back({reinterpret_cast<std::uintptr_t>(h.mirror[i]), h.slot[i], m});
    }
  }
  std::sort(held_pieces_.begin(), held_pieces_.end());
  const auto root = [this](std::uint32_t m) {
    while (held_groups_[m] != m) m = held_groups_[m] = held_groups_[held_groups_[m]];
    return m;
  };
  std::size_t groups = held_messages_.size();
  for (std::size_t k = 1; k < held_pieces_.size(); ++k) {
    const HeldPiece& a = held_pieces_[k - 1];
    const HeldPiece& b = held_pieces_[k];
    if (a.mirror != b.mirror || a.slot != b.slot) continue;
    const std::uint32_t ra = root(a.message);
    const std::uint32_t rb = root(b.message);
    if (ra != rb) {
      held_groups_[rb] = ra;
      --groups;
    }
  }
  return groups;
}

void ShmEndpoint::lend_pieces(AppIndex index, const Peer& p, std::size_t pieces,
                              const std::array<SegmentRef, kMaxSegments>& refs,
                              const std::array<Mirror*, kMaxSegments>& mirrors, Message& message) {
  HeldMessage& held = held_messages_.emplace_back();
  ++lent_since_count_;
  held.pieces = static_cast<std::uint32_t>(pieces);
  for (std::size_t i = 0; i < pieces; ++i) {
    const SegmentRef& r = refs[i];
    Mirror& m = *mirrors[i];
    if (m.loans[r.slot]++ == 0) note_loan(index, p, m, r.slot);
    (void)message.add(m.held[r.slot].share(), r.offset, r.length);
    held.mirror[i] = &m;
    held.slot[i] = r.slot;
    held.ends[i] = m.ends[r.slot];
  }
}

void ShmEndpoint::stall() {
  if (stalled_) return;
  stalled_ = true;
  stats_.recv_stalls.add_single_writer();
}

void ShmEndpoint::receive(AppIndex index, detail::Emitter& emit) {
  Peer& p = peers_[index];
  Channel& ch = *p.in;
  if (ch.sender_state.load(std::memory_order_acquire) == SenderState::aborted) {
    end_receiving(index, true);
    peer_lost(index, SegmentState::aborted, "peer aborted without bye", &emit);
    return;
  }
  const std::uint64_t tail = ch.tail.load(std::memory_order_acquire);
  std::uint64_t head = p.in_head;
  bool bye = false;
  std::string_view bad;
  Descriptor d;
  // Messages taken, counted once at the end.
  std::uint64_t taken = 0;
  std::uint64_t taken_bytes = 0;
  while (head != tail && emit.room()) {
    if (tail - head > kRingCells) {
      bad = "peer corrupted its channel";
      break;
    }
    // The head first (kind to sequence): a message in the ring needs nothing else of it.
    const std::byte* cell = ch.cell(head);
    std::memcpy(&d.entry, cell, kHeadBytes);
    if (d.entry.kind == EntryKind::bye) {
      ++head;
      bye = true;
      break;
    }
    if (d.entry.kind == EntryKind::pad && head % kCellsPerEntry != 0) {
      ++head;
      continue;
    }
    const Entry& e = d.entry;
    const bool in_ring = (e.reserved[0] & kInline) != 0;
    d.cells = in_ring ? inline_cells(e.size) : entry_cells(e.pieces);
    if (!well_formed(e, in_ring, d.cells, head, tail, p.next_sequence, options_.max_message_size)) {
      bad = "malformed descriptor from peer";
      break;
    }
    if (in_ring) {
      core::Buffer copy = ring_copies_->acquire();
      if (!copy) {
        stall();  // the application holds every copy buffer: go on when it drops one
        break;
      }
      copy_inline(ch, head, d.cells, copy.data(), e.size);
      if ((e.reserved[0] & kHasCrc) != 0 && wire::crc32c({copy.data(), e.size}) != e.crc) {
        bad = "payload CRC32C mismatch";
        break;
      }
      stalled_ = false;
      Completion& c = recv_completion(emit, index, e);
      (void)c.message.add(std::move(copy), 0, e.size);
      head += d.cells;
      ++p.next_sequence;
      ++taken;
      taken_bytes += e.size;
      continue;
    }
    read_refs(ch, head, cell, d);
    // The application may hold recv_buffers messages, whatever their pieces: the event builder
    // holds every part of the blocks it builds, each a message of up to kMaxSegments pieces.
    if (holds_every_message()) {
      stall();
      break;
    }
    std::array<Mirror*, kMaxSegments> mirrors;  // [0, pieces) set below; no zeroing per message
    bad = map_pieces(p, index, e, d.refs, mirrors);
    if (!bad.empty()) break;
    stalled_ = false;
    lend_pieces(index, p, e.pieces, d.refs, mirrors, recv_completion(emit, index, e).message);
    head += d.cells;
    ++p.next_sequence;
    ++taken;
    taken_bytes += e.size;
  }
  if (taken > 0) stats_.received(index, taken_bytes, taken);
  if (head != p.in_head) {
    p.in_head = head;
    ch.head.store(head, std::memory_order_release);
    mark_doorbell(index);
  }
  if (!bad.empty()) {
    stats_.rejected.add_single_writer();
    end_receiving(index, false);
    peer_lost(index, SegmentState::aborted, bad, &emit, /*rejected=*/true);
  } else if (bye) {
    end_receiving(index, true);
    end_sending(index);
    report(index, SegmentState::closed, {}, &emit);
  }
}

void ShmEndpoint::reap() {
  for (std::size_t k = lent_.size(); k-- > 0;) {
    Lent& l = lent_[k];
    if (l.mirror->held[l.slot].use_count() != 1) continue;
    Peer& p = peers_[l.peer];
    if (l.epoch == p.epoch && p.in != nullptr) {
      Channel& ch = *p.in;
      if (p.return_tail - p.return_head_cache >= kReturnEntries) {
        p.return_head_cache = ch.return_head.load(std::memory_order_acquire);
        if (p.return_tail - p.return_head_cache >= kReturnEntries) continue;
      }
      ch.returns[p.return_tail % kReturnEntries] =
          Return{l.mirror->number, l.slot, l.mirror->loans[l.slot], 0};
      ++p.return_tail;
      if (!p.returning) {
        p.returning = true;
        returned_.push_back(l.peer);
      }
    }
    l.mirror->loans[l.slot] = 0;
    ++l.mirror->ends[l.slot];
    loans_ended_ = true;
    lent_[k] = lent_.back();
    lent_.pop_back();
    held_slots_.store(held_slots_.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
  }
  // One publication per sender for all of this poll's returns.
  for (const AppIndex index : returned_) {
    Peer& p = peers_[index];
    p.returning = false;
    p.in->return_tail.store(p.return_tail, std::memory_order_release);
    mark_doorbell(index);
  }
  returned_.clear();
}

bool ShmEndpoint::reapable() const {
  for (const Lent& l : lent_) {
    if (l.mirror->held[l.slot].use_count() == 1) return true;
  }
  return false;
}

}  // namespace daqflow::transport::shm
