#pragma once
// What the time-slice builder and `daqflow dump` check in a contribution (docs/timeslices.md):
// the timeslice geometry the inputs share, and the checks of one input's part of one timeslice.
// Control path and builder data path; no allocation unless a check fails (the problem's text).

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <span>
#include <string>

#include "daqflow/core/result.hpp"
#include "daqflow/wire/timeslice.hpp"

namespace daqflow::apps::timeslice {

// The timeslice geometry every input of a builder shares (checked at Configure).
struct Geometry {
  std::uint32_t microslice_ns = 0;
  std::uint32_t core = 0;     // microslices per timeslice core
  std::uint32_t overlap = 0;  // microslices after the core, also in the timeslice
  [[nodiscard]] std::uint64_t duration_ns() const { return std::uint64_t{microslice_ns} * core; }
  friend bool operator==(const Geometry&, const Geometry&) = default;
};

// A ts_input's geometry from its parameters (validated, defaults filled in: microslice_us,
// timeslice_us, overlap_us); the error names owner (none for the application's own parameters:
// its host names it) and the key that is not whole microslices.
[[nodiscard]] Result<Geometry> input_geometry(const nlohmann::json& params,
                                              const std::string& owner);

// A message's bytes in order: one piece on byte-stream transports, the sender's on inproc/shm.
using Pieces = std::span<const std::span<const std::byte>>;

// Copies [offset, offset + out.size()) of the pieces into out; false when they end before.
[[nodiscard]] bool gather(Pieces pieces, std::uint64_t offset, std::span<std::byte> out);

struct ContributionCheck {
  wire::Contribution header;
  std::string problem;  // empty: sound
};

// Checks one contribution of `payload_size` bytes for timeslice `index`: its descriptor (sizes,
// index, start time, microslice counts of the geometry) and every microslice descriptor (header
// id and version, equipment, start time in order, offsets back to back, sizes adding up), and,
// with verify_crc, each content whose descriptor says its CRC-32C is valid.
[[nodiscard]] ContributionCheck check_contribution(Pieces pieces, std::uint64_t payload_size,
                                                   const Geometry& geometry, std::uint64_t index,
                                                   bool verify_crc);

}  // namespace daqflow::apps::timeslice
