// check_event_file(): reads a data file back and verifies it record by record (the checks of
// `daqflow dump`). Control-path code: it reads with stdio and allocates freely.

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "apps/output/timeslice_check.hpp"
#include "daqflow/apps/fed/event_numbers.hpp"
#include "daqflow/apps/output/event_file.hpp"
#include "daqflow/wire/crc32c.hpp"
#include "daqflow/wire/endian.hpp"
#include "daqflow/wire/evb.hpp"
#include "daqflow/wire/farm.hpp"
#include "daqflow/wire/fed.hpp"
#include "daqflow/wire/timeslice.hpp"
#include "event_checks.hpp"

namespace daqflow::apps::output {
namespace {

namespace fs = std::filesystem;

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Reads exactly n bytes; returns how many were read (less at the end of the file).
std::size_t read_fully(std::FILE* f, std::byte* out, std::size_t n) {
  return std::fread(out, 1, n, f);
}

// How a problem names a record: a timeslice by its index, an event by its L1 id (and resync
// count), as the CMS event builder names it.
std::string record_name(FileContent content, std::uint64_t number) {
  return content == FileContent::timeslices ? fmt::format("timeslice {}", number)
                                            : fed::event_name(number);
}

// Compares the sidecar with what the file holds.
void check_sidecar(FileReport& report, const fs::path& sidecar_path, std::uint64_t first_event,
                   std::uint64_t last_event) {
  auto sidecar = read_sidecar(sidecar_path.string());
  if (!sidecar) {
    report.problems.push_back(
        fmt::format("{}: {}", sidecar_path.string(), sidecar.error().message()));
    return;
  }
  const auto mismatch = [&](const char* what, const auto& sidecar_value, const auto& file_value) {
    report.problems.push_back(fmt::format("{}: {} is {} in the sidecar but {} in the data file",
                                          report.path, what, sidecar_value, file_value));
  };
  const std::string name = fs::path(report.path).filename().string();
  if (sidecar->file != name) mismatch("file name", sidecar->file, name);
  if (sidecar->run != report.run_number) mismatch("run number", sidecar->run, report.run_number);
  if (sidecar->bu != report.bu_id) mismatch("BU id", sidecar->bu, report.bu_id);
  if (sidecar->events != report.events) mismatch("event count", sidecar->events, report.events);
  if (sidecar->bytes != report.bytes) mismatch("size in bytes", sidecar->bytes, report.bytes);
  if (sidecar->checksum != report.checksum) {
    mismatch("CRC32C checksum", fmt::format("{:08x}", sidecar->checksum),
             fmt::format("{:08x}", report.checksum));
  }
  if (report.events > 0 && sidecar->first_event != first_event) {
    mismatch("first event", sidecar->first_event, first_event);
  }
  if (report.events > 0 && sidecar->last_event != last_event) {
    mismatch("last event", sidecar->last_event, last_event);
  }
}

// An SFC's record: the worker's decision (accept, this event) and its output, to the byte.
void check_decision(std::span<const std::byte> data, EventSummary& summary) {
  wire::Decision d;
  const auto status = wire::decode(data, data.size(), d);
  if (status != wire::PayloadStatus::ok) {
    summary.problem = fmt::format("decision: {}", wire::to_string(status));
  } else if (d.verdict != wire::Verdict::accept) {
    summary.problem = "decision: a record of an event that was not accepted";
  } else if (d.event != summary.record.event) {
    summary.problem = "decision: names " + fed::event_name(d.event);
  } else {
    summary.trigger_bits = d.trigger_bits;
    summary.output_size = d.output_size;
  }
}

// A timeslice: its descriptor, then each component present, checked as the builder checks a
// contribution (with every CRC-32C).
void check_timeslice(std::span<const std::byte> data, EventSummary& summary) {
  wire::TimesliceDescriptor d;
  if (data.size() < wire::kTimesliceDescriptorSize) {
    summary.problem = "shorter than a timeslice descriptor";
    return;
  }
  if (const auto s = wire::decode(data.first<wire::kTimesliceDescriptorSize>(), d);
      s != wire::PayloadStatus::ok) {
    summary.problem = fmt::format("timeslice descriptor: {}", wire::to_string(s));
    return;
  }
  if (d.index != summary.record.event) {
    summary.problem = fmt::format("timeslice descriptor names timeslice {}", d.index);
    return;
  }
  summary.start_ns = d.start_ns;
  summary.components_expected = d.components_expected;
  summary.microslice_ns = d.microslice_ns;
  summary.core_microslices = d.core_microslices;
  summary.overlap_microslices = d.overlap_microslices;
  const timeslice::Geometry geometry{d.microslice_ns, d.core_microslices, d.overlap_microslices};
  std::size_t offset = wire::kTimesliceDescriptorSize;
  for (std::uint16_t c = 0; c < d.components_present; ++c) {
    const std::span<const std::byte> rest = data.subspan(offset);
    if (rest.size() < wire::kContributionSize) {
      summary.problem = fmt::format("component {}: truncated", c);
      return;
    }
    // The component's size from its descriptor, bounded by what is left (checked in full below).
    const std::uint64_t microslices = wire::load_le32(rest.data() + 20);
    const std::uint64_t size = wire::kContributionSize +
                               microslices * wire::kMicrosliceDescriptorSize +
                               wire::load_le64(rest.data() + 32);
    summary.problem_source = wire::load_le16(rest.data() + 16);  // its equipment, until sound
    if (size > rest.size()) {
      summary.problem =
          fmt::format("component {}: {} bytes, {} left in the record", c, size, rest.size());
      return;
    }
    const std::array<std::span<const std::byte>, 1> pieces{rest.first(size)};
    const timeslice::ContributionCheck check =
        timeslice::check_contribution(pieces, size, geometry, d.index, true);
    if (!check.problem.empty()) {
      summary.problem = fmt::format("component {}: {}", c, check.problem);
      return;
    }
    summary.problem_source = -1;
    ComponentSummary& cs = summary.components.emplace_back();
    cs.offset = offset;
    cs.eq_id = check.header.eq_id;
    cs.microslices = check.header.microslices;
    cs.content_size = check.header.content_size;
    for (std::uint32_t j = 0; j < check.header.microslices; ++j) {
      const bool first = j < geometry.overlap;
      const bool overlap = j >= geometry.core;
      if (!first && !overlap) continue;
      wire::MicrosliceDescriptor m;
      (void)wire::decode(rest.subspan(wire::kContributionSize + j * wire::kMicrosliceDescriptorSize)
                             .first<wire::kMicrosliceDescriptorSize>(),
                         m);
      (first ? cs.first : cs.overlap).push_back({m.idx, m.size, m.crc});
    }
    offset += size;
  }
  if (offset != data.size()) {
    summary.problem = fmt::format("{} bytes after the last component", data.size() - offset);
  } else if (d.components_present < d.components_expected && summary.record.flags == 0) {
    summary.problem = "components missing, but the record is not flagged incomplete";
  }
}

// The file's header, read and decoded into `header` and the report (its length counted in
// report.bytes, its bytes in report.checksum); false, with the problem in the report, when it is
// not one. `buffer` holds kMaxFileHeaderSize bytes; the header's view of the BU id points into it.
bool read_file_header(std::FILE* file, std::vector<std::byte>& buffer, FileHeader& header,
                      FileReport& report) {
  const std::size_t got = read_fully(file, buffer.data(), kFileHeaderFixedSize);
  std::size_t header_size = 0;
  FileFormatStatus status = FileFormatStatus::too_short;
  if (got == kFileHeaderFixedSize) {
    // The fixed part says how long the whole header is; read the rest before decoding.
    const std::size_t declared = std::min<std::size_t>(
        kMaxFileHeaderSize,
        std::max<std::size_t>(kFileHeaderFixedSize, wire::load_le32(buffer.data() + 8)));
    const std::size_t rest = read_fully(file, buffer.data() + got, declared - got);
    status = decode_file_header(std::span(buffer.data(), got + rest), header, header_size);
  }
  if (status != FileFormatStatus::ok) {
    report.problems.push_back(fmt::format("{}: file header: {}", report.path, to_string(status)));
    return false;
  }
  report.run_number = header.run_number;
  report.sequence = header.sequence;
  report.bu_id = std::string(header.bu_id);
  report.content = header.content;
  report.bytes = header_size;
  report.checksum = wire::crc32c(std::span(buffer.data(), header_size));
  return true;
}

}  // namespace

void check_record_contents(std::span<const std::byte> data, EventSummary& summary,
                           std::vector<wire::FedFragmentInfo>& infos) {
  if (summary.content == FileContent::farm_decisions) {
    check_decision(data, summary);
  } else if (summary.content == FileContent::timeslices) {
    check_timeslice(data, summary);
  } else {
    check_fragments(data, summary, infos);
  }
}

void locate_damage(std::span<const std::byte> data, EventSummary& summary,
                   std::vector<wire::FedFragmentInfo>& infos) {
  check_record_contents(data, summary, infos);
  if (summary.problem_source < 0) summary.problem.clear();
}

// Walks an event's fragments from the back; fills summary.feds or summary.problem.
void check_fragments(std::span<const std::byte> data, EventSummary& summary,
                     std::vector<wire::FedFragmentInfo>& infos) {
  infos.resize(std::max<std::size_t>(infos.size(), data.size() / wire::kFedMinFragmentSize + 1));
  wire::FedCheck check;
  check.event = summary.record.event;
  wire::FedWalk walk = wire::walk_super_fragment(data, infos, check);
  if (walk.status != wire::FedStatus::ok) {
    wire::FedHeaderFields header;
    const bool named =
        walk.error_offset < data.size() &&
        wire::decode_header(data.subspan(walk.error_offset), header) == wire::FedStatus::ok;
    summary.problem =
        fmt::format("{} at byte {} of the event: {}",
                    named ? fmt::format("FED {}", header.source_id) : std::string("FED fragment"),
                    walk.error_offset, wire::to_string(walk.status));
    if (named) summary.problem_source = header.source_id;
    // The FEDs are still listed when only their contents are wrong (a bad CRC, say).
    wire::FedCheck structure_only;
    structure_only.verify_crc = false;
    structure_only.allow_reserved_bits = true;
    structure_only.allow_receiver_errors = true;
    walk = wire::walk_super_fragment(data, infos, structure_only);
    if (walk.status != wire::FedStatus::ok) return;
  }
  summary.feds.reserve(walk.count);
  for (std::size_t i = 0; i < walk.count; ++i) summary.feds.push_back(infos[i].source_id);
}

FileReport check_event_file(const std::string& path,
                            const std::function<void(const EventSummary&)>& on_event) {
  FileReport report;
  report.path = path;
  fs::path sidecar_path;
  if (ends_with(path, kDataSuffix)) {
    sidecar_path = fs::path(path).replace_extension(std::string(kSidecarSuffix));
    std::error_code ec;
    report.complete = fs::exists(sidecar_path, ec);
  }

  File file(std::fopen(path.c_str(), "rb"));
  if (!file) {
    report.problems.push_back(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
    return report;
  }

  std::error_code size_error;
  const auto file_size = static_cast<long>(fs::file_size(path, size_error));
  std::vector<std::byte> buffer(kMaxFileHeaderSize);
  FileHeader header;
  if (!read_file_header(file.get(), buffer, header, report)) return report;

  std::vector<wire::FedFragmentInfo> infos;
  std::uint64_t first_event = 0;
  std::uint64_t last_event = 0;
  std::array<std::byte, kRecordHeaderSize> record_bytes{};
  for (;;) {
    const std::size_t n = read_fully(file.get(), record_bytes.data(), record_bytes.size());
    if (n == 0) break;
    const std::uint64_t offset = report.bytes;
    EventSummary summary;
    summary.content = header.content;
    // A file without its sidecar may still be being written: its end can be anywhere.
    if (n < record_bytes.size() && !report.complete) {
      report.truncated = true;
      break;
    }
    if (n < record_bytes.size() ||
        decode_record_header(record_bytes, summary.record) != FileFormatStatus::ok) {
      report.problems.push_back(fmt::format(
          "{}: byte {}: {}", path, offset,
          n < record_bytes.size() ? "truncated record header" : "bad record magic number"));
      break;
    }
    const RecordHeader& record = summary.record;
    summary.data_offset = offset + kRecordHeaderSize;
    // Bounded by what is left of the file, so that a damaged size cannot ask for terabytes.
    const auto left =
        static_cast<std::uint64_t>(std::max<long>(0, file_size - std::ftell(file.get())));
    buffer.resize(std::min(record.size, left));
    const std::size_t data = read_fully(file.get(), buffer.data(), buffer.size());
    if (data < record.size) {
      if (!report.complete) {
        report.truncated = true;
        break;
      }
      report.problems.push_back(fmt::format("{}: {}: truncated ({} of {} bytes)", path,
                                            record_name(header.content, record.event), data,
                                            record.size));
      break;
    }
    const std::span<const std::byte> payload(buffer.data(), record.size);
    const std::uint32_t crc = wire::crc32c(payload);
    report.checksum = crc32c_combine(wire::crc32c(record_bytes, report.checksum), crc, record.size);
    report.bytes += kRecordHeaderSize + record.size;
    if (report.events == 0) first_event = record.event;
    last_event = record.event;
    ++report.events;

    const bool corrupted = (record.flags & wire::kEventCorrupted) != 0;
    if (corrupted) ++report.corrupted_events;
    if (crc != record.crc32c) {
      locate_damage(payload, summary, infos);
      summary.problem =
          fmt::format("CRC32C mismatch (record {:08x}, computed {:08x}){}", record.crc32c, crc,
                      summary.problem.empty() ? "" : "; " + summary.problem);
      report.problems.push_back(fmt::format(
          "{}: {}: {}", path, record_name(header.content, record.event), summary.problem));
    } else {
      check_record_contents(payload, summary, infos);
      if (!summary.problem.empty() && !corrupted) {
        report.problems.push_back(fmt::format(
            "{}: {}: {}", path, record_name(header.content, record.event), summary.problem));
      }
    }
    if (on_event) on_event(summary);
  }
  if (std::ferror(file.get()) != 0) {
    report.problems.push_back(fmt::format("{}: read error: {}", path, std::strerror(errno)));
  }
  if (report.complete) check_sidecar(report, sidecar_path, first_event, last_event);
  return report;
}

}  // namespace daqflow::apps::output
