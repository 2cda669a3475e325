#include "daqflow/apps/output/salvage.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "daqflow/apps/output/event_file.hpp"
#include "daqflow/apps/output/hdf5_file.hpp"
#include "daqflow/core/net.hpp"
#include "daqflow/wire/crc32c.hpp"
#include "outputs.hpp"
#include "salvage_core.hpp"

namespace daqflow::apps::output {
namespace {

namespace fs = std::filesystem;

// A file of the BU's as found, beside what the salvage core decides on.
struct Found {
  std::string path;  // NAME.dqf.part or NAME.dqf
  std::uint32_t sequence = 0;
};

std::string errno_text() {
  return std::strerror(errno);
}

bool read_at(int fd, std::uint64_t offset, std::byte* out, std::size_t n) {
  std::size_t done = 0;
  while (done < n) {
    const ssize_t got = ::pread(fd, out + done, n - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    done += static_cast<std::size_t>(got);
  }
  return true;
}

// Keeps records while they check; stops at the first torn or damaged one.
Result<SalvageFile> scan(const std::string& path, bool finished, Found& found) {
  core::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd)
    return Error(code_of_errno(errno), fmt::format("salvage: opening {}: {}", path, errno_text()));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0)
    return Error(code_of_errno(errno), fmt::format("salvage: {}: {}", path, errno_text()));
  found.path = path;
  SalvageFile s;
  s.finished = s.in_output = finished;  // only a file with its sidecar is output
  s.size = static_cast<std::uint64_t>(st.st_size);
  std::vector<std::byte> head(std::min<std::uint64_t>(s.size, kMaxFileHeaderSize));
  if (!read_at(fd.get(), 0, head.data(), head.size())) return s;  // not even a header
  FileHeader header;
  std::size_t header_size = 0;
  if (decode_file_header(head, header, header_size) != FileFormatStatus::ok) return s;
  found.sequence = header.sequence;
  s.end = header_size;
  std::vector<std::byte> data;
  std::uint64_t offset = header_size;
  std::array<std::byte, kRecordHeaderSize> rh{};
  while (offset + kRecordHeaderSize <= s.size) {
    RecordHeader r;
    if (!read_at(fd.get(), offset, rh.data(), rh.size()) ||
        decode_record_header(rh, r) != FileFormatStatus::ok ||
        r.size > s.size - offset - kRecordHeaderSize) {
      break;
    }
    data.resize(r.size);
    if (!read_at(fd.get(), offset + kRecordHeaderSize, data.data(), data.size()) ||
        wire::crc32c(data) != r.crc32c) {
      break;
    }
    const std::uint64_t end = offset + kRecordHeaderSize + r.size;
    s.records.push_back({r.event, offset, end});
    offset = end;
    s.end = end;
  }
  return s;
}

Result<std::uint32_t> checksum_of(const std::string& path, std::uint64_t size) {
  core::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd)
    return Error(code_of_errno(errno), fmt::format("salvage: opening {}: {}", path, errno_text()));
  std::vector<std::byte> buffer(1u << 20);
  std::uint32_t crc = 0;
  for (std::uint64_t offset = 0; offset < size;) {
    const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(buffer.size(), size - offset));
    if (!read_at(fd.get(), offset, buffer.data(), n))
      return Error(code_of_errno(errno),
                   fmt::format("salvage: reading {}: {}", path, errno_text()));
    crc = wire::crc32c(std::span<const std::byte>(buffer.data(), n), crc);
    offset += n;
  }
  return crc;
}

Result<void> write_file(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  core::UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd)
    return Error(code_of_errno(errno), fmt::format("salvage: creating {}: {}", tmp, errno_text()));
  for (std::size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(fd.get(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      return Error(code_of_errno(errno), fmt::format("salvage: writing {}: {}", tmp, errno_text()));
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd.get()) != 0 || ::rename(tmp.c_str(), path.c_str()) != 0)
    return Error(code_of_errno(errno),
                 fmt::format("salvage: finishing {}: {}", path, errno_text()));
  return ok();
}

// Truncates to s.end, then finishes the file with its sidecar, or removes it when no record is
// left. Returns the data file's path, or "" when removed.
Result<std::string> finish(const Found& found, const SalvageFile& s, std::uint32_t run,
                           std::string_view bu_id) {
  const bool part = !s.finished;
  std::string data_path = found.path;
  if (part) data_path.resize(data_path.size() - kPartSuffix.size());
  const std::string sidecar_path =
      data_path.substr(0, data_path.size() - kDataSuffix.size()) + std::string(kSidecarSuffix);
  const std::size_t kept = s.kept();
  if (kept == 0) {
    std::error_code ec;
    fs::remove(found.path, ec);
    fs::remove(sidecar_path, ec);
    return std::string();
  }
  if (s.end < s.size && ::truncate(found.path.c_str(), static_cast<off_t>(s.end)) != 0)
    return Error(code_of_errno(errno),
                 fmt::format("salvage: truncating {}: {}", found.path, errno_text()));
  {
    core::UniqueFd fd(::open(found.path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd || ::fsync(fd.get()) != 0)
      return Error(code_of_errno(errno),
                   fmt::format("salvage: syncing {}: {}", found.path, errno_text()));
  }
  auto crc = checksum_of(found.path, s.end);
  if (!crc) return crc.error();
  if (part && ::rename(found.path.c_str(), data_path.c_str()) != 0)
    return Error(code_of_errno(errno),
                 fmt::format("salvage: renaming {}: {}", found.path, errno_text()));
  Sidecar sidecar;
  sidecar.run = run;
  sidecar.bu = std::string(bu_id);
  sidecar.file = fs::path(data_path).filename().string();
  sidecar.events = kept;
  sidecar.bytes = s.end;
  sidecar.first_event = s.records.front().key;
  sidecar.last_event = s.records[kept - 1].key;
  sidecar.checksum = *crc;
  if (auto r = write_file(sidecar_path, to_json(sidecar).dump(2) + "\n"); !r) return r.error();
  return data_path;
}

bool is_hdf5(const std::string& path) {
  return path.ends_with(kHdf5Suffix) ||
         path.ends_with(std::string(kHdf5Suffix) + std::string(kPartSuffix));
}

// An HDF5 file: the records of its index whose bytes lie back to back in /data and match
// their CRC-32C, up to the first that does not (what its writer flushed last). Offsets are
// those of the records' bytes in /data.
Result<SalvageFile> scan_hdf5(const std::string& path, bool finished, Found& found) {
  found.path = path;
  SalvageFile s;
  s.finished = s.in_output = finished;
  auto reader = Hdf5Reader::open(path);
  if (!reader) return s;  // nothing readable: nothing kept
  const Hdf5Reader& r = **reader;
  found.sequence = r.info().sequence;
  s.size = r.data_size();
  std::vector<std::byte> data;
  for (const Hdf5Record& record : r.index()) {
    if (record.offset != s.end || record.size > s.size - record.offset) break;
    data.resize(record.size);
    if (!r.read(record.offset, data) || wire::crc32c(data) != record.crc32c) break;
    s.records.push_back({record.event, record.offset, record.offset + record.size});
    s.end = record.offset + record.size;
  }
  return s;
}

// Writes the records kept into a new file in the place of the old (NAME.h5.part becomes
// NAME.h5), or removes it when none is left. Returns the finished file's path, or "".
Result<std::string> finish_hdf5(const Found& found, const SalvageFile& s) {
  std::string path = found.path;
  if (!s.finished) path.resize(path.size() - kPartSuffix.size());
  const std::size_t kept = s.kept();
  std::error_code ec;
  if (kept == 0) {
    fs::remove(found.path, ec);
    return std::string();
  }
  auto reader = Hdf5Reader::open(found.path);
  if (!reader) return reader.error().context("salvage");
  const std::string tmp = path + ".salvage";
  fs::remove(tmp, ec);
  auto writer = Hdf5Writer::create(tmp, (*reader)->info(), Hdf5WriteOptions{});
  if (!writer) return writer.error().context("salvage");
  // In pieces of up to 64 MiB.
  constexpr std::uint64_t kStep = std::uint64_t{64} << 20;
  std::vector<Hdf5Record> records;
  std::vector<std::byte> data;
  for (std::size_t i = 0; i < kept;) {
    records.clear();
    const std::uint64_t from = (*reader)->index()[i].offset;
    while (i < kept &&
           (records.empty() ||
            (*reader)->index()[i].offset + (*reader)->index()[i].size - from <= kStep)) {
      records.push_back((*reader)->index()[i++]);
    }
    data.resize(records.back().offset + records.back().size - from);
    if (auto r = (*reader)->read(from, data); !r) return r.error().context("salvage: " + path);
    if (auto r = (*writer)->append(records, data); !r) return r.error().context("salvage");
  }
  if (auto r = (*writer)->close(); !r) return r.error().context("salvage");
  reader->reset();
  if (::rename(tmp.c_str(), path.c_str()) != 0)
    return Error(code_of_errno(errno), fmt::format("salvage: renaming {}: {}", tmp, errno_text()));
  if (!s.finished) fs::remove(found.path, ec);
  return path;
}

// The events the finished files named PREFIX* in dir hold: their sidecars' counts, or their
// HDF5 indexes' lengths.
Result<std::uint64_t> events_in_finished_files(const std::string& dir, const std::string& prefix) {
  std::uint64_t events = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    if (name.ends_with(kHdf5Suffix)) {
      auto counts = hdf5_file_counts(entry.path().string());
      if (!counts) return counts.error().context("salvage: counting what is on disk");
      events += counts->first;
      continue;
    }
    if (!name.ends_with(kSidecarSuffix)) continue;
    auto sidecar = read_sidecar(entry.path().string());
    if (!sidecar) return sidecar.error().context("salvage: counting what is on disk");
    events += sidecar->events;
  }
  if (ec)
    return Error(ErrorCode::unavailable,
                 fmt::format("salvage: reading directory {}: {}", dir, ec.message()));
  return events;
}

}  // namespace

Result<SalvageReport> salvage_bu_files(const std::string& dir, std::uint32_t run_number,
                                       std::string_view bu_id,
                                       const std::vector<SalvageBlock>& in_doubt,
                                       const std::vector<std::uint64_t>& sent_again) {
  // The BU's reserved room: on a full disk, what lets the files be finished.
  ::unlink((fs::path(dir) / reserve_file_name(run_number, bu_id)).c_str());
  const std::string first = data_file_stem(run_number, bu_id, 0);
  const std::string prefix = first.substr(0, first.size() - 4);  // "run000001_bu1_"
  std::vector<std::string> parts;
  std::string newest_finished;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    // The BU's files: .dqf, or .h5 with output kind hdf5.
    for (const std::string_view suffix : {kDataSuffix, kHdf5Suffix}) {
      if (name.ends_with(std::string(suffix) + std::string(kPartSuffix))) {
        parts.push_back(entry.path().string());
      } else if (name.ends_with(suffix) && entry.path().string() > newest_finished) {
        newest_finished = entry.path().string();  // sequences are zero-padded: names sort
      }
    }
  }
  if (ec)
    return Error(ErrorCode::unavailable,
                 fmt::format("salvage: reading directory {}: {}", dir, ec.message()));

  // In the order written (sequences), each as found beside what the core decides on.
  std::vector<std::pair<Found, SalvageFile>> scanned;
  const auto add = [&](const std::string& path, bool finished) -> Result<void> {
    Found f;
    auto s = is_hdf5(path) ? scan_hdf5(path, finished, f) : scan(path, finished, f);
    if (!s) return s.error();
    scanned.emplace_back(std::move(f), std::move(*s));
    return ok();
  };
  if (!newest_finished.empty()) {
    if (auto r = add(newest_finished, true); !r) return r.error();
  }
  for (const auto& path : parts) {
    if (auto r = add(path, false); !r) return r.error();
  }
  std::sort(scanned.begin(), scanned.end(),
            [](const auto& a, const auto& b) { return a.first.sequence < b.first.sequence; });
  std::vector<SalvageFile> files;
  for (auto& [found, file] : scanned) files.push_back(std::move(file));
  SalvageReport report = settle(
      files, in_doubt, [](const SalvageBlock& b, std::uint64_t i) { return b.first_event + i; },
      sent_again,
      [&](std::size_t f) {
        return is_hdf5(scanned[f].first.path)
                   ? finish_hdf5(scanned[f].first, files[f])
                   : finish(scanned[f].first, files[f], run_number, bu_id);
      });
  auto on_disk = events_in_finished_files(dir, prefix);
  if (!on_disk) return on_disk.error();
  report.events_on_disk = *on_disk;
  return report;
}

}  // namespace daqflow::apps::output
