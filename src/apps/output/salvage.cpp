#include "daqflow/apps/output/salvage.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "daqflow/apps/output/event_file.hpp"
#include "daqflow/core/net.hpp"
#include "daqflow/wire/crc32c.hpp"

namespace daqflow::apps::output {
namespace {

namespace fs = std::filesystem;

struct Record {
  std::uint64_t event = 0;
  std::uint64_t offset = 0;  // of its header
  std::uint64_t end = 0;     // past its data
};

struct Scanned {
  std::string path;  // as found: NAME.dqf.part or NAME.dqf
  bool finished = false;
  std::uint32_t sequence = 0;
  std::uint64_t size = 0;
  std::uint64_t header_size = 0;
  std::vector<Record> records;  // those whose header and CRC check, in file order
  std::uint64_t end = 0;        // where the kept records end (cuts lower it)
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
Result<Scanned> scan(const std::string& path, bool finished) {
  core::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return Error(fmt::format("salvage: opening {}: {}", path, errno_text()));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return Error(fmt::format("salvage: {}: {}", path, errno_text()));
  Scanned s;
  s.path = path;
  s.finished = finished;
  s.size = static_cast<std::uint64_t>(st.st_size);
  std::vector<std::byte> head(std::min<std::uint64_t>(s.size, kMaxFileHeaderSize));
  if (!read_at(fd.get(), 0, head.data(), head.size())) return s;  // not even a header
  FileHeader header;
  std::size_t header_size = 0;
  if (decode_file_header(head, header, header_size) != FileFormatStatus::ok) return s;
  s.sequence = header.sequence;
  s.header_size = header_size;
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
  if (!fd) return Error(fmt::format("salvage: opening {}: {}", path, errno_text()));
  std::vector<std::byte> buffer(1u << 20);
  std::uint32_t crc = 0;
  for (std::uint64_t offset = 0; offset < size;) {
    const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(buffer.size(), size - offset));
    if (!read_at(fd.get(), offset, buffer.data(), n))
      return Error(fmt::format("salvage: reading {}: {}", path, errno_text()));
    crc = wire::crc32c(std::span<const std::byte>(buffer.data(), n), crc);
    offset += n;
  }
  return crc;
}

Result<void> write_file(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  core::UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd) return Error(fmt::format("salvage: creating {}: {}", tmp, errno_text()));
  for (std::size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(fd.get(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error(fmt::format("salvage: writing {}: {}", tmp, errno_text()));
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd.get()) != 0 || ::rename(tmp.c_str(), path.c_str()) != 0)
    return Error(fmt::format("salvage: finishing {}: {}", path, errno_text()));
  return ok();
}

// Truncates to s.end, then finishes the file with its sidecar, or removes it when no record is
// left. Returns the data file's path, or "" when removed.
Result<std::string> finish(const Scanned& s, std::uint32_t run, std::string_view bu_id) {
  std::string data_path = s.path;
  if (!s.finished) data_path.resize(data_path.size() - kPartSuffix.size());
  const std::string sidecar_path =
      data_path.substr(0, data_path.size() - kDataSuffix.size()) + std::string(kSidecarSuffix);
  std::size_t kept = 0;
  while (kept < s.records.size() && s.records[kept].end <= s.end) ++kept;
  if (kept == 0) {
    std::error_code ec;
    fs::remove(s.path, ec);
    fs::remove(sidecar_path, ec);
    return std::string();
  }
  if (s.end < s.size && ::truncate(s.path.c_str(), static_cast<off_t>(s.end)) != 0)
    return Error(fmt::format("salvage: truncating {}: {}", s.path, errno_text()));
  {
    core::UniqueFd fd(::open(s.path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd || ::fsync(fd.get()) != 0)
      return Error(fmt::format("salvage: syncing {}: {}", s.path, errno_text()));
  }
  auto crc = checksum_of(s.path, s.end);
  if (!crc) return crc.error();
  if (!s.finished && ::rename(s.path.c_str(), data_path.c_str()) != 0)
    return Error(fmt::format("salvage: renaming {}: {}", s.path, errno_text()));
  Sidecar sidecar;
  sidecar.run = run;
  sidecar.bu = std::string(bu_id);
  sidecar.file = fs::path(data_path).filename().string();
  sidecar.events = kept;
  sidecar.bytes = s.end;
  sidecar.first_event = s.records.front().event;
  sidecar.last_event = s.records[kept - 1].event;
  sidecar.checksum = *crc;
  if (auto r = write_file(sidecar_path, to_json(sidecar).dump(2) + "\n"); !r) return r.error();
  return data_path;
}

// The events the sidecars of the files named PREFIX* in dir count.
Result<std::uint64_t> events_in_finished_files(const std::string& dir, const std::string& prefix) {
  std::uint64_t events = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0 || !name.ends_with(kSidecarSuffix)) continue;
    auto sidecar = read_sidecar(entry.path().string());
    if (!sidecar) return sidecar.error().context("salvage: counting what is on disk");
    events += sidecar->events;
  }
  if (ec) return Error(fmt::format("salvage: reading directory {}: {}", dir, ec.message()));
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
    const std::string part_suffix = std::string(kDataSuffix) + std::string(kPartSuffix);
    if (name.size() > part_suffix.size() &&
        name.compare(name.size() - part_suffix.size(), part_suffix.size(), part_suffix) == 0) {
      parts.push_back(entry.path().string());
    } else if (name.size() > kDataSuffix.size() &&
               name.compare(name.size() - kDataSuffix.size(), kDataSuffix.size(), kDataSuffix) ==
                   0 &&
               entry.path().string() > newest_finished) {
      newest_finished = entry.path().string();  // sequences are zero-padded: names sort
    }
  }
  if (ec) return Error(fmt::format("salvage: reading directory {}: {}", dir, ec.message()));

  std::vector<Scanned> files;
  if (!newest_finished.empty()) {
    auto s = scan(newest_finished, true);
    if (!s) return s.error();
    files.push_back(std::move(*s));
  }
  for (const auto& path : parts) {
    auto s = scan(path, false);
    if (!s) return s.error();
    files.push_back(std::move(*s));
  }
  std::sort(files.begin(), files.end(),
            [](const Scanned& a, const Scanned& b) { return a.sequence < b.sequence; });

  // Where each event of a block in doubt lies.
  std::map<std::uint64_t, std::pair<std::size_t, std::uint64_t>> where;  // event -> file, offset
  for (std::size_t f = 0; f < files.size(); ++f) {
    for (const Record& r : files[f].records) where[r.event] = {f, r.offset};
  }
  SalvageReport report;
  for (const SalvageBlock& b : in_doubt) {
    std::uint32_t present = 0;
    for (std::uint64_t e = b.first_event; e < b.first_event + b.events; ++e)
      present += where.contains(e) ? 1 : 0;
    if (present == 0 || present == b.events) continue;
    // Partial: cut every file it reaches before its first event there.
    for (std::uint64_t e = b.first_event; e < b.first_event + b.events; ++e) {
      const auto it = where.find(e);
      if (it == where.end()) continue;
      Scanned& s = files[it->second.first];
      s.end = std::min(s.end, it->second.second);
    }
  }
  for (const std::uint64_t e : sent_again) {
    const auto it = where.find(e);
    if (it == where.end()) continue;
    Scanned& s = files[it->second.first];
    s.end = std::min(s.end, it->second.second);
  }
  // Finish what needs it, then decide each block from what is output: the records of a file
  // with its sidecar.
  enum class Outcome { output, not_output, unknown };
  std::vector<Outcome> outcome(files.size(), Outcome::output);
  for (std::size_t f = 0; f < files.size(); ++f) {
    const Scanned& s = files[f];
    if (s.finished && s.end == s.size) continue;  // untouched
    auto done = finish(s, run_number, bu_id);
    if (!done) {
      report.unfinished.push_back(done.error().message());
      // A finished file that could not be rewritten may hold what was to be cut.
      outcome[f] = s.finished ? Outcome::unknown : Outcome::not_output;
      continue;
    }
    report.bytes_cut += s.size - s.end;
    if (done->empty()) continue;
    report.files.push_back(*done);
    for (const Record& r : s.records) report.events_kept += r.end <= s.end ? 1 : 0;
  }
  std::set<std::uint64_t> doubtful;  // events of blocks in doubt
  for (const SalvageBlock& b : in_doubt) {
    for (std::uint64_t e = b.first_event; e < b.first_event + b.events; ++e) doubtful.insert(e);
  }
  for (std::size_t f = 0; f < files.size(); ++f) {
    if (outcome[f] != Outcome::not_output) continue;
    for (const Record& r : files[f].records)
      report.events_lost += doubtful.contains(r.event) ? 0 : 1;
  }
  for (const SalvageBlock& b : in_doubt) {
    std::uint32_t out = 0;
    bool unknown = false;
    for (std::uint64_t e = b.first_event; e < b.first_event + b.events; ++e) {
      const auto it = where.find(e);
      if (it == where.end()) continue;
      const auto [f, offset] = it->second;
      unknown = unknown || outcome[f] == Outcome::unknown;
      out += outcome[f] == Outcome::output && offset < files[f].end ? 1 : 0;
    }
    if (unknown || (out != 0 && out != b.events)) {
      report.undecided.push_back(b.block_id);
    } else {
      (out == b.events && b.events > 0 ? report.written : report.not_written).push_back(b.block_id);
    }
  }
  auto on_disk = events_in_finished_files(dir, prefix);
  if (!on_disk) return on_disk.error();
  report.events_on_disk = *on_disk;
  return report;
}

}  // namespace daqflow::apps::output
