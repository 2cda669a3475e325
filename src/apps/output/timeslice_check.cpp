#include "apps/output/timeslice_check.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

#include "daqflow/runtime/params.hpp"
#include "daqflow/wire/crc32c.hpp"

namespace daqflow::apps::timeslice {

Result<Geometry> input_geometry(const nlohmann::json& params, const std::string& owner) {
  const double microslice_us = params.value("microslice_us", 0.0);
  const double timeslice_us = params.value("timeslice_us", 0.0);
  const double overlap_us = params.value("overlap_us", 0.0);
  auto error = [&](const char* key, const std::string& what) {
    std::string text = std::string("parameter '") + key + "': " + what;
    return Error(owner.empty() ? std::move(text) : owner + ": " + text);
  };
  const double microslice_ns = std::round(microslice_us * 1000);
  if (microslice_ns < 1 || microslice_ns > 4.0e9) {
    return error("microslice_us", "must be between 0.001 and 4000000");
  }
  Geometry g;
  g.microslice_ns = static_cast<std::uint32_t>(microslice_ns);
  const double core = timeslice_us * 1000 / microslice_ns;
  const double overlap = overlap_us * 1000 / microslice_ns;
  const std::string unit = " (microslice_us " +
                           runtime::json_text(params.value("microslice_us", nlohmann::json())) +
                           ")";
  if (core < 1 || std::abs(core - std::round(core)) > 1e-6) {
    return error("timeslice_us", "must be a whole number of microslices" + unit);
  }
  if (std::abs(overlap - std::round(overlap)) > 1e-6) {
    return error("overlap_us", "must be a whole number of microslices" + unit);
  }
  g.core = static_cast<std::uint32_t>(std::round(core));
  g.overlap = static_cast<std::uint32_t>(std::round(overlap));
  if (g.overlap > g.core) return error("overlap_us", "must not be longer than timeslice_us");
  if (std::uint64_t{g.core} + g.overlap > wire::kMaxMicroslicesPerContribution) {
    return error("timeslice_us", "more than " +
                                     std::to_string(wire::kMaxMicroslicesPerContribution) +
                                     " microslices per timeslice");
  }
  return g;
}

bool gather(Pieces pieces, std::uint64_t offset, std::span<std::byte> out) {
  std::size_t done = 0;
  for (const auto& piece : pieces) {
    if (done == out.size()) break;
    if (offset >= piece.size()) {
      offset -= piece.size();
      continue;
    }
    const std::size_t n = std::min<std::size_t>(piece.size() - offset, out.size() - done);
    std::memcpy(out.data() + done, piece.data() + offset, n);
    done += n;
    offset = 0;
  }
  return done == out.size();
}

namespace {

// CRC-32C of [offset, offset + length) of the pieces; false when they end before.
bool crc_of(Pieces pieces, std::uint64_t offset, std::uint64_t length, std::uint32_t& crc) {
  crc = 0;
  for (const auto& piece : pieces) {
    if (length == 0) break;
    if (offset >= piece.size()) {
      offset -= piece.size();
      continue;
    }
    const std::size_t n = std::min<std::uint64_t>(piece.size() - offset, length);
    crc = wire::crc32c(piece.subspan(offset, n), crc);
    length -= n;
    offset = 0;
  }
  return length == 0;
}

}  // namespace

ContributionCheck check_contribution(Pieces pieces, std::uint64_t payload_size,
                                     const Geometry& geometry, std::uint64_t index,
                                     bool verify_crc) {
  ContributionCheck out;
  std::array<std::byte, wire::kContributionSize> head{};
  if (payload_size < head.size() || !gather(pieces, 0, head)) {
    out.problem = fmt::format("{} bytes: shorter than a contribution descriptor", payload_size);
    return out;
  }
  if (const auto s = wire::decode(head, payload_size, out.header); s != wire::PayloadStatus::ok) {
    out.problem = fmt::format("contribution descriptor: {}", wire::to_string(s));
    return out;
  }
  const wire::Contribution& c = out.header;
  if (c.index != index) {
    out.problem = fmt::format("for timeslice {}, not {}", c.index, index);
    return out;
  }
  if (c.start_ns != index * geometry.duration_ns() || c.core_microslices != geometry.core ||
      c.microslices != geometry.core + geometry.overlap) {
    out.problem = fmt::format(
        "start {} ns, {} microslices ({} core): the timeslice's are {} ns, {} ({} core)",
        c.start_ns, c.microslices, c.core_microslices, index * geometry.duration_ns(),
        geometry.core + geometry.overlap, geometry.core);
    return out;
  }
  const std::uint64_t contents =
      wire::kContributionSize + std::uint64_t{c.microslices} * wire::kMicrosliceDescriptorSize;
  std::uint64_t first_offset = 0;
  std::uint64_t next_offset = 0;
  for (std::uint32_t j = 0; j < c.microslices; ++j) {
    std::array<std::byte, wire::kMicrosliceDescriptorSize> bytes{};
    (void)gather(pieces, wire::kContributionSize + std::uint64_t{j} * bytes.size(), bytes);
    wire::MicrosliceDescriptor d;
    if (wire::decode(bytes, d) != wire::PayloadStatus::ok) {
      out.problem =
          fmt::format("microslice {}: header id {:#04x} version {:#04x}, not 0xdd 0x01", j,
                      static_cast<unsigned>(bytes[0]), static_cast<unsigned>(bytes[1]));
      return out;
    }
    const std::uint64_t idx = c.start_ns + std::uint64_t{j} * geometry.microslice_ns;
    if (d.idx != idx || d.eq_id != c.eq_id) {
      out.problem = fmt::format("microslice {}: start {} ns, equipment {}: expected {} ns, {}", j,
                                d.idx, d.eq_id, idx, c.eq_id);
      return out;
    }
    if (j == 0) first_offset = next_offset = d.offset;
    if (d.offset != next_offset || d.offset - first_offset + d.size > c.content_size) {
      out.problem = fmt::format(
          "microslice {}: content at stream offset {} ({} bytes) is not back to back within the "
          "{} bytes of content",
          j, d.offset, d.size, c.content_size);
      return out;
    }
    if (verify_crc && (d.flags & wire::kMicrosliceCrcValid) != 0) {
      std::uint32_t crc = 0;
      if (!crc_of(pieces, contents + (d.offset - first_offset), d.size, crc) || crc != d.crc) {
        out.problem = fmt::format(
            "microslice {} (start {} ns): CRC-32C {:08x}, descriptor says "
            "{:08x}",
            j, d.idx, crc, d.crc);
        return out;
      }
    }
    next_offset = d.offset + d.size;
  }
  if (next_offset - first_offset != c.content_size) {
    out.problem = fmt::format("microslice sizes add up to {} bytes, the descriptor says {}",
                              next_offset - first_offset, c.content_size);
  }
  return out;
}

}  // namespace daqflow::apps::timeslice
