#include "daqflow/apps/pattern.hpp"

#include <algorithm>
#include <array>
#include <cstring>

#include "daqflow/wire/endian.hpp"

namespace daqflow::apps {
namespace {

constexpr std::uint64_t kGolden = 0x9E3779B97F4A7C15ull;

std::uint64_t splitmix64(std::uint64_t x) {
  x += kGolden;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

std::uint64_t seed(std::uint64_t seq, std::uint32_t src) {
  return splitmix64(seq ^ (static_cast<std::uint64_t>(src) << 48) ^
                    splitmix64(static_cast<std::uint64_t>(src) + 1));
}

std::byte pattern_byte(std::uint64_t base, std::size_t i) {
  const std::uint64_t word = base + static_cast<std::uint64_t>(i / 8) * kGolden;
  return static_cast<std::byte>(word >> (8 * (i % 8)));
}

// One "ends" field: value bytes at message offset field_at.
struct Field {
  std::size_t at = 0;
  std::size_t length = 0;
  std::array<std::byte, 8> value{};
};

// The fields a message of message_size carries; returns how many.
std::size_t ends_fields(std::size_t message_size, std::uint64_t seq, std::uint32_t src,
                        std::array<Field, 3>& out) {
  std::size_t n = 0;
  if (message_size >= 8) {
    out[n] = Field{0, 8, {}};
    wire::store_le64(out[n].value.data(), seq);
    ++n;
  }
  if (message_size >= 12) {
    out[n] = Field{8, 4, {}};
    wire::store_le32(out[n].value.data(), src);
    ++n;
  }
  if (message_size >= 20) {
    out[n] = Field{message_size - 8, 8, {}};
    wire::store_le64(out[n].value.data(), seq);
    ++n;
  }
  return n;
}

// Hands visit(at, value, length) the part of each end field inside the piece [offset, offset +
// piece_size): its place in the piece and the field's bytes there. Returns the message offset of
// the first field whose visit returned false, kPatternOk when none did.
template <typename Visit>
std::size_t visit_ends(std::size_t piece_size, std::size_t offset, std::size_t message_size,
                       std::uint64_t seq, std::uint32_t src, Visit visit) {
  std::array<Field, 3> fields;
  const std::size_t n = ends_fields(message_size, seq, src, fields);
  for (std::size_t k = 0; k < n; ++k) {
    const Field& f = fields[k];
    const std::size_t from = std::max(f.at, offset);
    const std::size_t to = std::min(f.at + f.length, offset + piece_size);
    if (from < to && !visit(from - offset, f.value.data() + (from - f.at), to - from)) return f.at;
  }
  return kPatternOk;
}

}  // namespace

bool parse_verify(std::string_view text, Verify& out) {
  if (text == "ends") {
    out = Verify::ends;
    return true;
  }
  if (text == "full") {
    out = Verify::full;
    return true;
  }
  return false;
}

std::string_view to_string(Verify verify) {
  return verify == Verify::full ? "full" : "ends";
}

void write_ends(std::span<std::byte> piece, std::size_t offset, std::size_t message_size,
                std::uint64_t seq, std::uint32_t src) {
  if (offset == 0 && piece.size() == message_size && message_size >= 20) {
    // The whole message in one piece, the common case: three stores (a small message's sender
    // spends more on the general walk below than on the rest of its send).
    wire::store_le64(piece.data(), seq);
    wire::store_le32(piece.data() + 8, src);
    wire::store_le64(piece.data() + message_size - 8, seq);
    return;
  }
  visit_ends(piece.size(), offset, message_size, seq, src,
             [&piece](std::size_t at, const std::byte* value, std::size_t length) {
               std::memcpy(piece.data() + at, value, length);
               return true;
             });
}

std::size_t check_ends(std::span<const std::byte> piece, std::size_t offset,
                       std::size_t message_size, std::uint64_t seq, std::uint32_t src) {
  if (offset == 0 && piece.size() == message_size && message_size >= 20 &&
      wire::load_le64(piece.data()) == seq && wire::load_le32(piece.data() + 8) == src &&
      wire::load_le64(piece.data() + message_size - 8) == seq) {
    return kPatternOk;  // the whole message, intact; a mismatch takes the walk to say where
  }
  return visit_ends(piece.size(), offset, message_size, seq, src,
                    [&piece](std::size_t at, const std::byte* value, std::size_t length) {
                      return std::memcmp(piece.data() + at, value, length) == 0;
                    });
}

void fill_full(std::span<std::byte> piece, std::size_t offset, std::uint64_t seq,
               std::uint32_t src) {
  const std::uint64_t base = seed(seq, src);
  std::size_t j = 0;
  for (; j < piece.size() && (offset + j) % 8 != 0; ++j) piece[j] = pattern_byte(base, offset + j);
  std::uint64_t word = base + static_cast<std::uint64_t>((offset + j) / 8) * kGolden;
  for (; j + 8 <= piece.size(); j += 8) {
    wire::store_le64(piece.data() + j, word);
    word += kGolden;
  }
  for (; j < piece.size(); ++j) piece[j] = pattern_byte(base, offset + j);
}

std::size_t check_full(std::span<const std::byte> piece, std::size_t offset, std::uint64_t seq,
                       std::uint32_t src) {
  const std::uint64_t base = seed(seq, src);
  std::size_t j = 0;
  for (; j < piece.size() && (offset + j) % 8 != 0; ++j) {
    if (piece[j] != pattern_byte(base, offset + j)) return offset + j;
  }
  std::uint64_t word = base + static_cast<std::uint64_t>((offset + j) / 8) * kGolden;
  // Blocks of words compared without an early exit vectorise; the exact byte is found after.
  constexpr std::size_t kBlock = 64;
  while (j + 8 * kBlock <= piece.size()) {
    std::uint64_t diff = 0;
    std::uint64_t w = word;
    for (std::size_t k = 0; k < kBlock; ++k) {
      diff |= wire::load_le64(piece.data() + j + 8 * k) ^ w;
      w += kGolden;
    }
    if (diff != 0) break;
    j += 8 * kBlock;
    word = w;
  }
  for (; j + 8 <= piece.size(); j += 8) {
    if (wire::load_le64(piece.data() + j) != word) {
      for (std::size_t b = 0; b < 8; ++b) {
        if (piece[j + b] != pattern_byte(base, offset + j + b)) return offset + j + b;
      }
    }
    word += kGolden;
  }
  for (; j < piece.size(); ++j) {
    if (piece[j] != pattern_byte(base, offset + j)) return offset + j;
  }
  return kPatternOk;
}

}  // namespace daqflow::apps
