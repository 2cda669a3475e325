#include "daqflow/apps/evb/readout_store.hpp"

#include <algorithm>
#include <bit>
#include <cstring>

#include "apps/app_support.hpp"
#include "daqflow/wire/endian.hpp"

namespace daqflow::apps::evb {

namespace {

constexpr std::size_t kMaxSlices = transport::kMaxSegments - 1;
// Blocks held out of the table (in doubt at the EVM): at most the windows of the BUs lost at once.
constexpr std::size_t kAsideReserve = 64;

std::size_t align8(std::size_t n) {
  return (n + 7) & ~std::size_t{7};
}

std::string kb(std::size_t bytes) {
  return std::to_string((bytes + 999) / 1000) + " kB";
}

}  // namespace

std::size_t worst_case_slices(std::size_t events, std::size_t max_super_fragment,
                              std::size_t chunk_size) {
  const std::size_t sf = align8(max_super_fragment);
  if (chunk_size <= sf) return SIZE_MAX;
  const std::size_t least_fill = chunk_size - sf;  // of every chunk between the first and last
  return (events * sf + least_fill - 1) / least_fill + 1;
}

std::size_t auto_chunk_size(std::size_t events, std::size_t max_super_fragment) {
  std::size_t chunk = std::max(kAutoChunkMin, std::bit_ceil(4 * align8(max_super_fragment)));
  while (chunk < (std::size_t{1} << 31) &&
         worst_case_slices(events, max_super_fragment, chunk) > kMaxSlices)
    chunk *= 2;
  return chunk;
}

ReadoutStore::ReadoutStore(const ReadoutSettings& s) : settings_(s) {}

ReadoutStore::~ReadoutStore() {
  clear();
  // A peer (an inproc BU) may still hold chunks: leak the pools rather than unmap them.
  core::retire_pool(chunks_, core::BusyPool::leak, "readout store");
  core::retire_pool(descriptors_, core::BusyPool::leak, "readout store");
}

Result<std::unique_ptr<ReadoutStore>> ReadoutStore::create(const ReadoutSettings& settings,
                                                           std::size_t max_super_fragment) {
  ReadoutSettings s = settings;
  const std::size_t n = s.max_block_events;
  if (s.chunk_size == 0) s.chunk_size = auto_chunk_size(n, max_super_fragment);
  if (s.chunks == 0) {
    const std::size_t slices = worst_case_slices(n, max_super_fragment, s.chunk_size);
    s.chunks = std::max(kAutoStoreBytes / s.chunk_size, slices > kMaxSlices ? 2 : slices + 2);
  }
  if (n == 0 || n > wire::kMaxEventsPerBlock) {
    return Error("blocks of " + std::to_string(n) + " events: the protocol allows 1.." +
                 std::to_string(wire::kMaxEventsPerBlock));
  }
  if (s.chunk_size > (std::size_t{1} << 31) || s.chunk_size % 64 != 0) {
    return Error("parameter 'chunk_size': " + std::to_string(s.chunk_size) +
                 " must be a multiple of 64 up to 2 GiB");
  }
  if (max_super_fragment == 0) return Error("the fragment source reports no super-fragment size");
  if (align8(max_super_fragment) >= s.chunk_size) {
    return Error("parameter 'chunk_size': " + std::to_string(s.chunk_size) +
                 " bytes cannot hold a super-fragment of up to " +
                 std::to_string(max_super_fragment) + " bytes; raise chunk_size");
  }
  const std::size_t block_bytes =
      wire::block_descriptor_size(static_cast<std::uint32_t>(n)) + n * align8(max_super_fragment);
  if (block_bytes > s.max_message_size) {
    return Error(
        "a block of " + std::to_string(n) + " events with super-fragments of up to " +
        kb(max_super_fragment) + " needs " + kb(block_bytes) +
        ", above transports.max_message_size (" + kb(s.max_message_size) +
        "); raise max_message_size, or lower the BUs' events_per_request or the "
        "largest fragment (fragment_size; input.max_fragment_bytes for input kind network)");
  }
  const std::size_t slices = worst_case_slices(n, max_super_fragment, s.chunk_size);
  if (slices > kMaxSlices) {
    return Error("a block of " + std::to_string(n) + " events with super-fragments of up to " +
                 kb(max_super_fragment) + " may span " + std::to_string(slices) + " chunks of " +
                 kb(s.chunk_size) + ", more than the " + std::to_string(kMaxSlices) +
                 " a message can carry; raise chunk_size");
  }
  if (s.chunks < slices + 2) {
    return Error("parameter 'chunks': " + std::to_string(s.chunks) +
                 " is too few; a block may need " + std::to_string(slices) +
                 " chunks, so at least " + std::to_string(slices + 2) + " are needed");
  }
  if (!std::has_single_bit(s.event_capacity) || !std::has_single_bit(s.block_capacity)) {
    return Error("event and block capacities must be powers of two");
  }
  std::unique_ptr<ReadoutStore> store(new ReadoutStore(s));
  if (auto r = store->allocate(); !r) return r.error();
  return store;
}

Result<void> ReadoutStore::allocate() {
  const auto make_pool = [this](std::string name, std::size_t size, std::size_t count) {
    return settings_.endpoint != nullptr
               ? settings_.endpoint->make_send_pool(std::move(name), size, count)
               : core::BufferPool::create(std::move(name), size, count);
  };
  auto chunks = make_pool(settings_.name + ".chunks", settings_.chunk_size, settings_.chunks);
  if (!chunks) return chunks.error();
  chunks_ = std::move(*chunks);
  // A re-assigned block gets a fresh descriptor while the old one may still be in flight.
  auto descriptors = make_pool(settings_.name + ".descriptors",
                               wire::block_descriptor_size(settings_.max_block_events),
                               2 * settings_.block_capacity);
  if (!descriptors) return descriptors.error();
  descriptors_ = std::move(*descriptors);
  // The store keeps a reference to every chunk and reuses the most recently freed one it finds
  // unreferenced: the pool's own free list is first-in first-out, which would cycle all of the
  // chunk memory through the caches.
  chunk_refs_.resize(settings_.chunks);
  chunk_uncut_.assign(settings_.chunks, 0);
  idle_chunks_.reserve(settings_.chunks);
  for (std::size_t i = 0; i < settings_.chunks; ++i) {
    core::Buffer b = chunks_->acquire();
    if (!b) return Error(ErrorCode::internal, "chunk pool of " + settings_.name + " came up short");
    const std::uint32_t index = b.index();
    chunk_refs_[index] = std::move(b);
  }
  for (std::size_t i = settings_.chunks; i-- > 0;)
    idle_chunks_.push_back(static_cast<std::uint32_t>(i));
  events_.resize(settings_.event_capacity);
  event_mask_ = settings_.event_capacity - 1;
  blocks_ = Retention<Block>(settings_.block_capacity);
  blocks_.reserve_aside(kAsideReserve);
  pending_.resize(settings_.block_capacity);
  ready_.reserve(settings_.block_capacity);
  return ok();
}

bool ReadoutStore::take_chunk() {
  for (std::size_t i = idle_chunks_.size(); i-- > 0;) {
    const std::uint32_t index = idle_chunks_[i];
    // Only the store's reference left: no block and no peer reads it any more.
    if (chunk_refs_[index].use_count() != 1) continue;
    idle_chunks_.erase(idle_chunks_.begin() + static_cast<std::ptrdiff_t>(i));
    chunk_uncut_[index] = 0;
    current_ = index;
    offset_ = 0;
    return true;
  }
  return false;
}

// The current chunk takes no more events; it is reused once its events are cut and their
// blocks are acknowledged.
void ReadoutStore::leave_chunk() {
  if (current_ < 0) return;
  const auto index = static_cast<std::uint32_t>(current_);
  current_ = -1;
  if (chunk_uncut_[index] == 0) idle_chunks_.push_back(index);
}

std::size_t ReadoutStore::chunks_shared() const {
  std::size_t n = 0;
  for (const auto& c : chunk_refs_) n += c.use_count() > 1 ? 1 : 0;
  return n;
}

ProduceStatus ReadoutStore::produce(fed::FragmentSource& source, std::uint64_t limit) {
  if (!error_.empty()) return ProduceStatus::failed;
  if (produced_ >= limit) return ProduceStatus::not_ready;
  if (produced_ - consumed_ >= settings_.event_capacity) return ProduceStatus::ring_full;
  if (current_ < 0 && !take_chunk()) return ProduceStatus::no_chunk;
  for (int attempt = 0; attempt < 2; ++attempt) {
    const auto index = static_cast<std::size_t>(current_);
    std::byte* base = chunk_refs_[index].data();
    const fed::Produced p = source.produce(
        produced_, std::span<std::byte>(base + offset_, settings_.chunk_size - offset_));
    switch (p.status) {
      case fed::Produced::Status::ready: {
        EventRecord& e = events_[produced_ & event_mask_];
        e.chunk = static_cast<std::uint32_t>(index);
        e.offset = static_cast<std::uint32_t>(offset_);
        e.size = p.bytes;
        e.flags = p.flags;
        ++chunk_uncut_[index];
        offset_ += p.bytes;  // back to back: a block's events in one chunk are one slice
        ++produced_;
        ++counters_.events_produced;
        counters_.bytes_produced += p.bytes;
        if (offset_ >= settings_.chunk_size) leave_chunk();
        return ProduceStatus::produced;
      }
      case fed::Produced::Status::not_ready:
        return ProduceStatus::not_ready;
      case fed::Produced::Status::failed:
        error_ = source.failure();  // it names the event, by its L1 id
        return ProduceStatus::failed;
      case fed::Produced::Status::no_room:
        if (offset_ == 0) {
          error_ = "a super-fragment does not fit an empty chunk of " +
                   std::to_string(settings_.chunk_size) + " bytes; raise chunk_size";
          return ProduceStatus::failed;
        }
        leave_chunk();
        if (!take_chunk()) return ProduceStatus::no_chunk;
        break;
    }
  }
  return ProduceStatus::no_chunk;
}

ReadoutStore::Block* ReadoutStore::find(std::uint64_t id) {
  return blocks_.find(id);
}

const ReadoutStore::Block& ReadoutStore::held(std::uint64_t id) const {
  return *blocks_.find(id);  // ready_ holds only ids of held blocks
}

AssignOutcome ReadoutStore::assign(const wire::Assign& a) {
  if (Block* found = find(a.block_id)) {
    Block& b = *found;
    if (a.generation <= b.generation) {
      ++counters_.stale_assigns;
      return AssignOutcome::stale;
    }
    b.generation = a.generation;
    b.bu = a.bu;
    if (b.state == State::waiting) return AssignOutcome::updated;
    if (!write_descriptor(b)) return AssignOutcome::error;
    if (b.state != State::ready) {
      b.state = State::ready;
      ready_.push_back(b.id);
    }
    ++counters_.blocks_resent;
    return AssignOutcome::resend;
  }
  if (a.generation > 0 || a.block_id < released_) {
    // A re-assign of a block released here already, or a repeated assign: nothing to do.
    ++counters_.stale_assigns;
    return AssignOutcome::stale;
  }
  if (!blocks_.place_free(a.block_id)) {
    error_ = "block " + std::to_string(a.block_id) + " assigned while block " +
             std::to_string(blocks_.key_at(a.block_id)) + " still holds its place: more than " +
             std::to_string(settings_.block_capacity) + " blocks unacknowledged";
    return AssignOutcome::error;
  }
  if (a.first_event != next_assign_ || a.event_count == 0 ||
      a.event_count > settings_.max_block_events) {
    error_ = "assign of block " + std::to_string(a.block_id) + " for events " +
             std::to_string(a.first_event) + " + " + std::to_string(a.event_count) +
             ": expected events from " + std::to_string(next_assign_) + ", at most " +
             std::to_string(settings_.max_block_events);
    return AssignOutcome::error;
  }
  Block& b = *blocks_.hold(a.block_id);
  b.state = State::waiting;
  b.id = a.block_id;
  b.first = a.first_event;
  b.count = a.event_count;
  b.generation = a.generation;
  b.bu = a.bu;
  b.first_id = a.first_id;
  b.lumi_section = a.lumi_section;
  next_assign_ += a.event_count;
  ++waiting_count_;
  pending_[(pending_head_ + pending_size_) % pending_.size()] = {b.id, b.first, b.count};
  ++pending_size_;
  return AssignOutcome::accepted;
}

std::span<const std::byte> ReadoutStore::event_bytes(std::uint64_t event) const {
  const EventRecord& e = events_[event & event_mask_];
  return {chunk_refs_[e.chunk].data() + e.offset, e.size};
}

void ReadoutStore::release_event(const EventRecord& e) {
  if (--chunk_uncut_[e.chunk] == 0 && static_cast<std::int64_t>(e.chunk) != current_) {
    idle_chunks_.push_back(e.chunk);
  }
}

bool ReadoutStore::cut() {
  while (pending_size_ > 0) {
    const PendingCut& p = pending_[pending_head_];
    if (produced_ < p.first + p.count) break;
    Block* found = find(p.id);
    if (found != nullptr && found->state == State::waiting) {
      Block& b = *found;
      --waiting_count_;
      if (!build(b)) return false;
      b.state = State::ready;
      ready_.push_back(b.id);
      ++counters_.blocks_cut;
    } else {
      // Closed before its events were produced (the BU gave up on this RU): only skip them.
      for (std::uint64_t e = p.first; e < p.first + p.count; ++e)
        release_event(events_[e & event_mask_]);
    }
    consumed_ = p.first + p.count;
    pending_head_ = (pending_head_ + 1) % pending_.size();
    --pending_size_;
  }
  return true;
}

bool ReadoutStore::build(Block& b) {
  b.slice_count = 0;
  b.bytes = 0;
  for (std::uint64_t n = b.first; n < b.first + b.count; ++n) {
    const EventRecord& e = events_[n & event_mask_];
    Slice* last = b.slice_count > 0 ? &b.slices[b.slice_count - 1] : nullptr;
    if (last != nullptr && last->chunk.index() == e.chunk &&
        last->offset + last->length == e.offset) {
      last->length += e.size;
    } else {
      if (b.slice_count == kMaxSlices) {
        error_ = "block " + std::to_string(b.id) + " needs more than " +
                 std::to_string(kMaxSlices) + " chunk slices; raise chunk_size";
        return false;
      }
      b.slices[b.slice_count++] = Slice{chunk_refs_[e.chunk].share(), e.offset, e.size};
    }
    b.bytes += e.size;
    release_event(e);
  }
  return write_descriptor(b);
}

bool ReadoutStore::write_descriptor(Block& b) {
  const std::size_t size = wire::block_descriptor_size(b.count);
  if (size + b.bytes > settings_.max_message_size) {
    error_ = "block " + std::to_string(b.id) + " of " + std::to_string(b.count) + " events is " +
             std::to_string(size + b.bytes) + " bytes, above transports.max_message_size (" +
             std::to_string(settings_.max_message_size) + ")";
    return false;
  }
  core::Buffer d = descriptors_->acquire();
  if (!d) {
    error_ = "no free block descriptor (" + std::to_string(descriptors_->count()) + " in use)";
    return false;
  }
  std::byte* p = d.data();
  if (b.descriptor) {
    // A re-assign: same entries, new header.
    std::memcpy(p + wire::kBlockHeaderSize, b.descriptor.data() + wire::kBlockHeaderSize,
                size - wire::kBlockHeaderSize);
  } else {
    std::uint64_t n = b.first;
    for (std::uint32_t i = 0; i < b.count; ++i, ++n) {
      const EventRecord& e = events_[n & event_mask_];
      wire::encode(wire::BlockEntry{e.size, e.flags},
                   std::span<std::byte, wire::kBlockEntrySize>(
                       p + wire::kBlockHeaderSize + std::size_t{i} * wire::kBlockEntrySize,
                       wire::kBlockEntrySize));
    }
  }
  wire::BlockHeader h;
  h.block_id = b.id;
  h.first_event = b.first;
  h.event_count = b.count;
  h.ru = settings_.ru;
  h.generation = b.generation;
  h.first_id = b.first_id;
  h.lumi_section = b.lumi_section;
  wire::encode(h, std::span<std::byte, wire::kBlockHeaderSize>(p, wire::kBlockHeaderSize));
  b.descriptor = std::move(d);
  b.descriptor_size = static_cast<std::uint32_t>(size);
  return true;
}

ReadyBlock ReadoutStore::ready_at(std::size_t i) const {
  const Block& b = held(ready_[i]);
  return {b.id, b.generation, b.bu};
}

void ReadoutStore::stage(std::size_t i, transport::Message& message) const {
  const Block& b = held(ready_[i]);
  message.clear();
  message.type = wire::MessageType::block;
  message.flags = 0;
  message.tag = b.id;
  message.add(b.descriptor.share(), 0, b.descriptor_size);
  for (std::uint8_t s = 0; s < b.slice_count; ++s) {
    message.add(b.slices[s].chunk.share(), b.slices[s].offset, b.slices[s].length);
  }
}

void ReadoutStore::mark_sent(std::size_t i) {
  find(ready_[i])->state = State::sent;
  ready_.erase(ready_.begin() + static_cast<std::ptrdiff_t>(i));
}

void ReadoutStore::park(transport::AppIndex bu) {
  std::size_t kept = 0;
  for (const std::uint64_t id : ready_) {
    Block& b = *find(id);
    if (b.bu == bu) {
      b.state = State::parked;
    } else {
      ready_[kept++] = id;
    }
  }
  ready_.resize(kept);
}

void ReadoutStore::unready(const Block& b) {
  const auto it = std::find(ready_.begin(), ready_.end(), b.id);
  if (it != ready_.end()) ready_.erase(it);
}

void ReadoutStore::close(Block& b) {
  if (b.state == State::ready) unready(b);
  if (b.state == State::waiting) --waiting_count_;
  b.descriptor.reset();
  for (std::uint8_t s = 0; s < b.slice_count; ++s) b.slices[s].chunk.reset();
  b.slice_count = 0;
  b.state = State::free;
}

std::size_t ReadoutStore::release_below(std::uint64_t below) {
  const std::size_t n = blocks_.release_below(below, [this](Block& b) { close(b); });
  released_ = std::max(released_, below);
  counters_.blocks_released += n;
  return n;
}

bool ReadoutStore::hold(std::uint64_t block_id, bool keep) {
  if (keep) return blocks_.set_aside(block_id);
  if (!blocks_.release_aside(block_id, [this](Block& b) { close(b); })) return false;
  ++counters_.blocks_released;
  return true;
}

void ReadoutStore::clear() {
  blocks_.clear([this](Block& b) { close(b); });
  ready_.clear();
  pending_size_ = 0;
  waiting_count_ = 0;
  for (auto& c : chunk_refs_) c.reset();
  idle_chunks_.clear();
  current_ = -1;
}

}  // namespace daqflow::apps::evb
