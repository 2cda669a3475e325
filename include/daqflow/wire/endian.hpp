#pragma once
// Little-endian (and, for the few big-endian fields of CMS equipment, big-endian) loads and
// stores that do not assume alignment.

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace daqflow::wire {

static_assert(std::endian::native == std::endian::little,
              "daqflow's wire codecs assume a little-endian host");

inline std::uint16_t load_le16(const std::byte* p) {
  std::uint16_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline std::uint32_t load_le32(const std::byte* p) {
  std::uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline std::uint64_t load_le64(const std::byte* p) {
  std::uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store_le16(std::byte* p, std::uint16_t v) {
  std::memcpy(p, &v, sizeof v);
}
inline void store_le32(std::byte* p, std::uint32_t v) {
  std::memcpy(p, &v, sizeof v);
}
inline void store_le64(std::byte* p, std::uint64_t v) {
  std::memcpy(p, &v, sizeof v);
}
inline std::uint64_t load_be64(const std::byte* p) {
  return __builtin_bswap64(load_le64(p));
}
inline void store_be64(std::byte* p, std::uint64_t v) {
  store_le64(p, __builtin_bswap64(v));
}

}  // namespace daqflow::wire
