#pragma once
// What the shm transport keeps in shared memory, as every process that maps a segment sees it.
//
// Two kinds of segment, both named /dev/shm/daqflow.<run tag>.<context>.<application>.<what>:
//   endpoint ("ep"): an application's receive side. One Channel per application of the address
//     table (the channel of application s carries what s sends to the owner) and a doorbell.
//   pool ("p<number>"): a send pool cut into equal buffers. Messages are written once into it by
//     their producer and read in place by their consumer.
// Every segment starts with a SegmentHeader that says who made it (pid and process start time),
// so that `daqflow shm clean` can tell a crashed run's leftovers from a live run's segments.
//
// A Channel is two single-producer single-consumer rings: descriptors from the sender to the
// receiver (ring), and returned buffer loans from the receiver back to the sender (returns).
// Positions only grow; a slot is position % capacity. Each position counter sits on its own
// cache line and is written by one side only.

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

#include "daqflow/core/rings.hpp"
#include "daqflow/core/sanitizers.hpp"
#include "daqflow/wire/header.hpp"

namespace daqflow::transport::shm {

inline constexpr std::uint64_t kMagic = 0x314D485346514144ull;  // "DAQFSHM1", little-endian
inline constexpr std::uint32_t kVersion = 4;                    // 4: the owner's run
inline constexpr std::size_t kHeaderBytes = 4096;
inline constexpr std::size_t kNameField = 64;

// n rounded up to a multiple of to (segment sizes to pages, strides to cache lines).
constexpr std::size_t round_up(std::size_t n, std::size_t to) {
  return (n + to - 1) / to * to;
}

enum class SegmentKind : std::uint32_t { endpoint = 1, pool = 2 };
enum class SegmentState : std::uint32_t { creating = 0, open = 1, closed = 2, aborted = 3 };

struct SegmentHeader {
  std::uint64_t magic;
  std::uint32_t version;
  SegmentKind kind;
  std::int32_t pid;
  std::uint32_t run_number;  // endpoint: the run of its owner (RunIdentity); senders of another
                             // run never attach

  std::uint64_t start_time;  // the owner's start time (clock ticks since boot, /proc/PID/stat)
  std::uint64_t bytes;       // size of the whole segment
  char run_tag[kNameField];
  char context[kNameField];
  char application[kNameField];
  // pool: the buffers, from data_offset
  std::uint64_t stride;
  std::uint64_t count;
  std::uint64_t data_offset;
  // endpoint: channels, from data_offset, channel_bytes apart
  std::uint64_t channels;
  std::uint64_t channel_bytes;
  std::uint64_t run_key;
  alignas(core::kCacheLine) std::atomic<SegmentState> state;
  // Bumped by a sender that attaches to one of our channels: the owner rescans them.
  alignas(core::kCacheLine) std::atomic<std::uint64_t> changes;
  // The doorbell: a futex word bumped to wake the owner, and whether it sleeps on it.
  alignas(core::kCacheLine) std::atomic<std::uint32_t> doorbell;
  alignas(core::kCacheLine) std::atomic<std::uint32_t> sleeping;
};
static_assert(sizeof(SegmentHeader) <= kHeaderBytes);
static_assert(std::atomic<std::uint64_t>::is_always_lock_free);
static_assert(std::atomic<std::uint32_t>::is_always_lock_free);

// A piece of a message in one of the sender's pools.
struct SegmentRef {
  std::uint32_t pool;  // the sender's pool number (segment "p<number>")
  std::uint32_t slot;  // buffer index in that pool
  std::uint32_t offset;
  std::uint32_t length;
};

// The descriptor ring is cut into 32-byte cells; positions count cells and only grow, a
// position's cell is position % kRingCells. A record starts with a 32-byte head (Entry up to
// refs) in its first cell:
//   message by reference: an Entry (two cells, always from an even position, so that it is one
//     aligned cache line), its pieces beyond kInlineRefs in the entries after it, kRefsPerEntry
//     to an entry;
//   message inline: the head, then the payload packed into the cells after it;
//   pad: one cell skipped, so that the next entry starts on an even position;
//   bye: the sender has closed; nothing follows.
inline constexpr std::size_t kCell = 32;
enum class EntryKind : std::uint8_t { message = 1, bye = 2, pad = 3 };

struct alignas(core::kCacheLine) Entry {
  EntryKind kind;
  std::uint8_t type;
  std::uint16_t flags;
  std::uint8_t pieces;
  std::uint8_t reserved[3];
  std::uint32_t size;
  std::uint32_t crc;
  std::uint64_t tag;
  std::uint64_t sequence;
  SegmentRef refs[2];
};
inline constexpr std::size_t kInlineRefs = 2;
inline constexpr std::size_t kRefsPerEntry = sizeof(Entry) / sizeof(SegmentRef);
inline constexpr std::size_t kHeadBytes = offsetof(Entry, refs);
inline constexpr std::size_t kCellsPerEntry = sizeof(Entry) / kCell;
static_assert(sizeof(Entry) == core::kCacheLine);
static_assert(kHeadBytes == kCell);

// Cells of a message by reference with this many pieces.
[[nodiscard]] constexpr std::size_t entry_cells(std::size_t pieces) {
  const std::size_t entries =
      pieces <= kInlineRefs ? 1 : 1 + (pieces - kInlineRefs + kRefsPerEntry - 1) / kRefsPerEntry;
  return entries * kCellsPerEntry;
}

// Entry::reserved[0] bits.
inline constexpr std::uint8_t kHasCrc = 1;  // crc holds the payload's CRC32C
inline constexpr std::uint8_t kInline = 2;  // the payload is in the ring (pieces is 0)

// Payloads up to kInlineMax bytes travel in the ring itself, packed after their head. A 64-byte
// message then costs three cells, a cache line and a half, and nothing else, where by reference
// it costs a ring line, a pool line that the receiving core reads and the sending core then takes
// back to write the next message, and a return through the other ring.
inline constexpr std::size_t kInlineMax = 7 * kCell;
[[nodiscard]] constexpr std::size_t inline_cells(std::size_t size) {
  return 1 + (size + kCell - 1) / kCell;
}
static_assert(inline_cells(kInlineMax) == 8);

// Copies n bytes (a piece of a payload of at most kInlineMax) in fixed-size moves, which compile
// to a few vector loads and stores; the last move may overlap the one before it, never the bytes
// beyond n. A call of the library's memcpy for a few dozen bytes costs more than the copy.
inline void copy_small(std::byte* to, const std::byte* from, std::size_t n) {
  if (n >= 32) {
    std::size_t at = 0;
    for (; at + 32 <= n; at += 32) std::memcpy(to + at, from + at, 32);
    if (at < n) std::memcpy(to + n - 32, from + n - 32, 32);
  } else if (n >= 16) {
    std::memcpy(to, from, 16);
    std::memcpy(to + n - 16, from + n - 16, 16);
  } else if (n >= 8) {
    std::memcpy(to, from, 8);
    std::memcpy(to + n - 8, from + n - 8, 8);
  } else if (n >= 4) {
    std::memcpy(to, from, 4);
    std::memcpy(to + n - 4, from + n - 4, 4);
  } else if (n > 0) {
    to[0] = from[0];
    to[n / 2] = from[n / 2];
    to[n - 1] = from[n - 1];
  }
}

// The 32-byte head of a message in the ring (pieces 0) as four words, in the byte order of
// Entry's fields. Put together in a local Entry and copied, it was read back with vector loads
// that the CPU could not forward from the field stores before them: a stall on every message.
struct HeadWords {
  std::uint64_t first;   // kind, type, flags, pieces (0), reserved[0]
  std::uint64_t second;  // size, crc
  std::uint64_t tag;
  std::uint64_t sequence;
};
[[nodiscard]] inline HeadWords head_words(EntryKind kind, wire::MessageType type,
                                          std::uint16_t flags, std::uint8_t bits,
                                          std::uint32_t size, std::uint32_t crc, std::uint64_t tag,
                                          std::uint64_t sequence) {
  static_assert(std::endian::native == std::endian::little);
  static_assert(offsetof(Entry, type) == 1 && offsetof(Entry, flags) == 2 &&
                offsetof(Entry, pieces) == 4 && offsetof(Entry, reserved) == 5 &&
                offsetof(Entry, size) == 8 && offsetof(Entry, crc) == 12 &&
                offsetof(Entry, tag) == 16 && offsetof(Entry, sequence) == 24);
  return {std::uint64_t{static_cast<std::uint8_t>(kind)} |
              std::uint64_t{static_cast<std::uint8_t>(type)} << 8 | std::uint64_t{flags} << 16 |
              std::uint64_t{bits} << 40,
          std::uint64_t{size} | std::uint64_t{crc} << 32, tag, sequence};
}
inline void store_head(std::byte* cell, const HeadWords& h) {
  std::memcpy(cell, &h.first, 8);
  std::memcpy(cell + 8, &h.second, 8);
  std::memcpy(cell + 16, &h.tag, 8);
  std::memcpy(cell + 24, &h.sequence, 8);
}

// Streaming stores: a message written into the ring past the sender's caches, straight towards
// memory, where the receiving core reads it. An ordinary store to a ring line the receiving core
// has read must first take the line back from that core, and x86 commits stores in order, so
// every later store of the sender (its bookkeeping, a register pushed for a call) queues behind
// it; the sender's store queue, full of such stores, then holds only two or three messages, and
// the rate is that many messages per cache-line round trip between the cores. A streaming store
// waits for no line. They are weakly ordered: the sender fences them (sfence_streams) before it
// publishes its tail. Not under ThreadSanitizer, which would not see them.
#if defined(__x86_64__) && !DAQFLOW_UNDER_TSAN
inline constexpr bool kStreams = true;
// Streams n bytes (1 to kInlineMax) to a 16-byte aligned place in the ring, 16 bytes at a time;
// the last chunk is padded with zeros, which stay within the message's last cell. Inlined: a
// call's pushes are stores too.
[[gnu::always_inline]] inline void stream_small(std::byte* to, const std::byte* from,
                                                std::size_t n) {
  std::size_t at = 0;
  for (; at + 16 <= n; at += 16) {
    _mm_stream_si128(reinterpret_cast<__m128i*>(to + at),
                     _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + at)));
  }
  if (at < n) {
    alignas(16) std::byte last[16] = {};
    copy_small(last, from + at, n - at);
    _mm_stream_si128(reinterpret_cast<__m128i*>(to + at),
                     _mm_load_si128(reinterpret_cast<const __m128i*>(last)));
  }
}
[[gnu::always_inline]] inline void stream_head(std::byte* cell, const HeadWords& h) {
  _mm_stream_si128(
      reinterpret_cast<__m128i*>(cell),
      _mm_set_epi64x(static_cast<long long>(h.second), static_cast<long long>(h.first)));
  _mm_stream_si128(
      reinterpret_cast<__m128i*>(cell + 16),
      _mm_set_epi64x(static_cast<long long>(h.sequence), static_cast<long long>(h.tag)));
}
inline void sfence_streams() {
  _mm_sfence();
}
#else
inline constexpr bool kStreams = false;
inline void stream_small(std::byte* to, const std::byte* from, std::size_t n) {
  copy_small(to, from, n);
}
inline void stream_head(std::byte* cell, const HeadWords& h) {
  store_head(cell, h);
}
inline void sfence_streams() {}
#endif
// A payload is streamed when at least this many messages to the peer are in flight before it.
inline constexpr std::uint64_t kStreamFrom = 4;

enum class SenderState : std::uint32_t { none = 0, attached = 1, closed = 2, aborted = 3 };

// Deep enough for a pipeline of a thousand small messages; powers of two, so that a position's
// cell is a mask. Pages of a channel that no sender uses are never touched.
inline constexpr std::size_t kRingCells = 2048;      // descriptor cells in flight per sender
inline constexpr std::size_t kReturnEntries = 2048;  // returns in flight per sender
static_assert((kRingCells & (kRingCells - 1)) == 0);
static_assert((kReturnEntries & (kReturnEntries - 1)) == 0);

// Where an inline payload lies in a ring: from the cell after its head on, contiguous up to the
// end of the ring, and on from the ring's start when it wraps.
struct InlineBytes {
  std::byte* first;
  std::size_t first_length;  // bytes at first; the rest are at second
  std::byte* second;

  void put(std::size_t at, const std::byte* from, std::size_t n) const {
    if (at < first_length) {
      const std::size_t k = n < first_length - at ? n : first_length - at;
      std::memcpy(first + at, from, k);
      at += k;
      from += k;
      n -= k;
    }
    if (n > 0) std::memcpy(second + (at - first_length), from, n);
  }
  void get(std::byte* to, std::size_t n) const {
    const std::size_t k = n < first_length ? n : first_length;
    std::memcpy(to, first, k);
    if (n > k) std::memcpy(to + k, second, n - k);
  }
};
[[nodiscard]] inline InlineBytes inline_bytes(std::byte* ring, std::uint64_t position) {
  const std::size_t cell = (position + 1) % kRingCells;
  return {ring + cell * kCell, (kRingCells - cell) * kCell, ring};
}

// A loan returned: count references to slot of pool are no longer read by the receiver.
struct Return {
  std::uint32_t pool;
  std::uint32_t slot;
  std::uint32_t count;
  std::uint32_t reserved;
};

struct Channel {
  // Sender's side.
  alignas(core::kCacheLine) std::atomic<std::uint64_t> tail;  // cells published
  std::atomic<SenderState> sender_state;
  std::atomic<std::uint64_t> return_head;  // returns taken back
  // Receiver's side.
  alignas(core::kCacheLine) std::atomic<std::uint64_t> head;  // cells consumed
  std::atomic<std::uint64_t> return_tail;                     // returns published
  alignas(core::kCacheLine) std::byte ring[kRingCells * kCell];
  Return returns[kReturnEntries];

  [[nodiscard]] std::byte* cell(std::uint64_t position) {
    return ring + position % kRingCells * kCell;
  }
  // The entry at an even position.
  [[nodiscard]] Entry& entry(std::uint64_t position) {
    return *reinterpret_cast<Entry*>(cell(position));
  }
};

[[nodiscard]] constexpr std::size_t channel_stride() {
  return (sizeof(Channel) + core::kCacheLine - 1) / core::kCacheLine * core::kCacheLine;
}

}  // namespace daqflow::transport::shm
