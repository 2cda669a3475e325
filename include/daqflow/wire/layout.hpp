#pragma once
// A fixed-size message described once: each member at its byte offset and the reserved bytes,
// from which both its encoder and its decoder follow, so the two cannot disagree. Every member
// travels little-endian in as many bytes as it has (enums as their underlying type, doubles as
// their IEEE-754 bits).
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <type_traits>
#include <utility>

#include "daqflow/wire/payload_status.hpp"

namespace daqflow::wire::layout {

static_assert(std::endian::native == std::endian::little,
              "daqflow's wire codecs assume a little-endian host");

template <class P>
struct MemberOf;
template <class M, class T>
struct MemberOf<T M::*> {
  using type = T;
};

// The member `Member` at byte `Offset`.
template <auto Member, std::size_t Offset>
struct Field {
  using T = typename MemberOf<decltype(Member)>::type;
  static_assert(std::is_trivially_copyable_v<T> && (std::is_arithmetic_v<T> || std::is_enum_v<T>));
  static constexpr std::size_t end = Offset + sizeof(T);

  template <class M>
  static void store(const M& m, std::byte* p) {
    std::memcpy(p + Offset, &(m.*Member), sizeof(T));
  }
  template <class M>
  static bool load(const std::byte* p, M& m) {
    std::memcpy(&(m.*Member), p + Offset, sizeof(T));
    return true;
  }
};

// `Bytes` bytes at `Offset` that are written as zero and must read as zero.
template <std::size_t Offset, std::size_t Bytes>
struct Reserved {
  static constexpr std::size_t end = Offset + Bytes;

  template <class M>
  static void store(const M& /*m*/, std::byte* p) {
    std::memset(p + Offset, 0, Bytes);
  }
  template <class M>
  static bool load(const std::byte* p, M& /*m*/) {
    for (std::size_t i = 0; i < Bytes; ++i) {
      if (p[Offset + i] != std::byte{0}) return false;
    }
    return true;
  }
};

// A `T` at `Offset` that is always `Value` (a magic number): written so, and a message whose bytes
// there differ is refused.
template <std::size_t Offset, typename T, T Value>
struct Constant {
  static constexpr std::size_t end = Offset + sizeof(T);

  template <class M>
  static void store(const M& /*m*/, std::byte* p) {
    const T v = Value;
    std::memcpy(p + Offset, &v, sizeof(T));
  }
  template <class M>
  static bool load(const std::byte* p, M& /*m*/) {
    T v;
    std::memcpy(&v, p + Offset, sizeof(T));
    return v == Value;
  }
};

// Accepts every decoded message: the default check of Message::decode.
struct AnyValue {
  template <class M>
  PayloadStatus operator()(const M& /*m*/) const {
    return PayloadStatus::ok;
  }
};

// Message `M`, `Size` bytes long, made of `Parts` (Field, Reserved and Constant).
template <class M, std::size_t Size, class... Parts>
struct Message {
  static_assert(((Parts::end <= Size) && ...), "a part of the message lies beyond its size");

  static void store(const M& m, std::span<std::byte, Size> out) {
    (Parts::store(m, out.data()), ...);
  }

  // Reads the message from the first Size bytes of `in` (at least as many) into `out`; false
  // (and `out` untouched) when a reserved or constant part holds other bytes.
  static bool load(std::span<const std::byte> in, M& out) {
    M m{};
    if (!read(in.data(), m)) return false;
    out = m;
    return true;
  }

  // Decodes exactly `Size` bytes (`exact`) or the first `Size` of longer input into `out`, which
  // is written only when the bytes are well formed and `check(message)` answers ok.
  template <class Check = AnyValue>
  static PayloadStatus decode(std::span<const std::byte> in, M& out, Check check = {},
                              bool exact = true) {
    if (exact ? in.size() != Size : in.size() < Size) return PayloadStatus::wrong_size;
    M m{};
    if (!read(in.data(), m)) return PayloadStatus::reserved_not_zero;
    const PayloadStatus status = check(std::as_const(m));
    if (status == PayloadStatus::ok) out = m;
    return status;
  }

 private:
  // Every part from p into m; false when a reserved or constant part holds other bytes.
  static bool read(const std::byte* p, M& m) { return (Parts::load(p, m) && ...); }
};

}  // namespace daqflow::wire::layout
