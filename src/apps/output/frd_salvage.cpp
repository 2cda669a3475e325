// The salvage of a lost BU's FRD files (salvage.hpp, salvage_frd_files).

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "daqflow/apps/output/frd.hpp"
#include "daqflow/apps/output/salvage.hpp"
#include "daqflow/core/net.hpp"
#include "daqflow/wire/crc32c.hpp"
#include "file_util.hpp"

namespace daqflow::apps::output {
namespace {

namespace fs = std::filesystem;

struct FrdRecord {
  std::uint32_t event = 0;
  std::uint64_t offset = 0;  // of its FRD header
  std::uint64_t end = 0;     // past its data
};

struct FrdScanned {
  std::string path;  // where it is: in open/ or the run directory
  bool open = false;
  bool has_jsn = false;
  std::uint32_t lumi = 0;
  std::uint32_t index = 0;
  std::uint64_t size = 0;
  std::vector<FrdRecord> records;          // those that check, in file order
  std::uint64_t end = kRawFileHeaderSize;  // where the kept records end (cuts lower it)
};

FrdScanned scan(const fs::path& path, bool open, std::uint32_t run, std::uint32_t lumi,
                std::uint32_t index) {
  FrdScanned s;
  s.path = path.string();
  s.open = open;
  s.lumi = lumi;
  s.index = index;
  std::ifstream in(path, std::ios::binary);
  const std::vector<char> raw((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
  const std::span<const std::byte> file(reinterpret_cast<const std::byte*>(raw.data()), raw.size());
  s.size = file.size();
  std::uint64_t at = kRawFileHeaderSize;
  while (at + kFrdHeaderSize <= file.size()) {
    FrdHeader h;
    if (decode_frd_header(file.subspan(at), h) != FrdStatus::ok || h.run != run || h.lumi != lumi ||
        h.size > file.size() - at - kFrdHeaderSize ||
        wire::crc32c(file.subspan(at + kFrdHeaderSize, h.size)) != h.crc32c) {
      break;
    }
    const std::uint64_t end = at + kFrdHeaderSize + h.size;
    s.records.push_back({h.event, at, end});
    at = end;
    s.end = end;
  }
  return s;
}

std::size_t kept(const FrdScanned& s) {
  std::size_t n = 0;
  while (n < s.records.size() && s.records[n].end <= s.end) ++n;
  return n;
}

// Truncates to s.end and finishes the file in the run directory (raw header, .jsn), or removes
// it when nothing is left. Returns its path there, or "" when removed.
Result<std::string> finish(const FrdScanned& s, const std::string& run_dir, std::uint32_t run,
                           std::string_view bu_id) {
  const std::string stem = frd_data_stem(run, s.lumi, s.index);
  const std::string final_path = (fs::path(run_dir) / (stem + ".raw")).string();
  const std::string jsn = (fs::path(run_dir) / (stem + ".jsn")).string();
  const std::size_t events = kept(s);
  if (events == 0) {
    std::error_code ec;
    fs::remove(s.path, ec);
    fs::remove(jsn, ec);
    return std::string();
  }
  core::UniqueFd fd(::open(s.path.c_str(), O_WRONLY | O_CLOEXEC));
  std::array<std::byte, kRawFileHeaderSize> header{};
  encode_raw_file_header(
      RawFileHeader{static_cast<std::uint16_t>(std::min<std::size_t>(events, kMaxRawFileEvents)),
                    s.lumi, s.end},
      header);
  if (!fd || ::ftruncate(fd.get(), static_cast<off_t>(s.end)) != 0 ||
      ::pwrite(fd.get(), header.data(), header.size(), 0) != static_cast<ssize_t>(header.size()) ||
      ::fsync(fd.get()) != 0) {
    return Error(fmt::format("salvage: finishing {}: {}", s.path, std::strerror(errno)));
  }
  if (s.open && ::rename(s.path.c_str(), final_path.c_str()) != 0) {
    return Error(fmt::format("salvage: renaming {}: {}", s.path, std::strerror(errno)));
  }
  std::string error;
  if (!write_file_then_rename(
          jsn, frd_json_text(run_dir, "rawData.jsd", {events, s.end}, std::string(bu_id)), error)) {
    return Error("salvage: " + error);
  }
  return final_path;
}

// Every section's EoLS and the run's EoR, from the raw files' headers: the BU writes no more.
Result<void> close_run(const std::string& run_dir, std::uint32_t run, std::string_view bu_id) {
  struct Section {
    std::uint64_t events = 0;
    std::uint64_t bytes = 0;
    std::uint64_t files = 0;
  };
  std::map<std::uint32_t, Section> sections;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(run_dir, ec)) {
    const auto name = parse_frd_data_name(entry.path().filename().string());
    if (!name) continue;
    std::array<std::byte, kRawFileHeaderSize> bytes{};
    std::ifstream in(entry.path(), std::ios::binary);
    in.read(reinterpret_cast<char*>(bytes.data()), bytes.size());
    RawFileHeader h;
    if (!in || decode_raw_file_header(bytes, h) != FrdStatus::ok) continue;
    Section& s = sections[name->lumi];
    s.events += h.events;
    s.bytes += h.file_size;
    ++s.files;
  }
  std::uint64_t events = 0;
  std::uint64_t files = 0;
  std::uint32_t last = 0;
  std::string error;
  const std::string bu(bu_id);
  for (const auto& [lumi, s] : sections) {
    if (!write_file_then_rename(
            (fs::path(run_dir) / frd_eols_name(run, lumi)).string(),
            frd_json_text(run_dir, "EoLS.jsd", {s.events, s.files, s.events, 0, s.bytes}, bu),
            error)) {
      return Error("salvage: " + error);
    }
    events += s.events;
    files += s.files;
    last = lumi;
  }
  if (!write_file_then_rename(
          (fs::path(run_dir) / frd_eor_name(run)).string(),
          frd_json_text(run_dir, "EoR.jsd", {events, files, sections.size(), last}, bu), error)) {
    return Error("salvage: " + error);
  }
  fs::remove(fs::path(run_dir) / "open", ec);  // empty by now
  sync_directory(run_dir);
  return ok();
}

}  // namespace

Result<SalvageReport> salvage_frd_files(const std::string& run_dir, std::uint32_t run_number,
                                        std::string_view bu_id,
                                        const std::vector<SalvageBlock>& in_doubt) {
  std::set<std::uint32_t> doubt_sections;
  for (const SalvageBlock& b : in_doubt) doubt_sections.insert(b.lumi);
  std::vector<FrdScanned> files;
  std::error_code ec;
  for (const bool open : {false, true}) {
    const fs::path dir = open ? fs::path(run_dir) / "open" : fs::path(run_dir);
    if (!fs::exists(dir, ec)) continue;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      const auto name = parse_frd_data_name(entry.path().filename().string());
      if (!name) continue;
      const std::uint32_t lumi = name->lumi;
      const bool has_jsn =
          !open &&
          fs::exists(entry.path().parent_path() / (entry.path().stem().string() + ".jsn"), ec);
      if (!open && has_jsn && !doubt_sections.contains(lumi)) continue;
      FrdScanned s = scan(entry.path(), open, run_number, lumi, name->index);
      s.has_jsn = has_jsn;
      files.push_back(std::move(s));
    }
  }
  if (ec) return Error(fmt::format("salvage: reading {}: {}", run_dir, ec.message()));
  std::sort(files.begin(), files.end(), [](const FrdScanned& a, const FrdScanned& b) {
    return std::pair(a.lumi, a.index) < std::pair(b.lumi, b.index);
  });

  // Where each event lies: (section, event number) -> file, offset. A number found twice in a
  // section (a resync repeated it) is ambiguous: a block that has one stays undecided.
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::pair<std::size_t, std::uint64_t>> where;
  std::set<std::pair<std::uint32_t, std::uint32_t>> ambiguous;
  for (std::size_t f = 0; f < files.size(); ++f) {
    for (const FrdRecord& r : files[f].records) {
      if (!where.try_emplace({files[f].lumi, r.event}, f, r.offset).second) {
        ambiguous.insert({files[f].lumi, r.event});
      }
    }
  }
  auto key = [](const SalvageBlock& b, std::uint64_t i) {
    return std::pair(b.lumi, static_cast<std::uint32_t>(b.first_event + i));
  };
  auto is_ambiguous = [&](const SalvageBlock& b) {
    for (std::uint64_t i = 0; i < b.events; ++i) {
      if (ambiguous.contains(key(b, i))) return true;
    }
    return false;
  };
  SalvageReport report;
  for (const SalvageBlock& b : in_doubt) {
    if (is_ambiguous(b)) continue;
    std::uint32_t present = 0;
    for (std::uint64_t i = 0; i < b.events; ++i) present += where.contains(key(b, i)) ? 1 : 0;
    if (present == 0 || present == b.events) continue;
    for (std::uint64_t i = 0; i < b.events; ++i) {  // partial: cut before its first event there
      const auto it = where.find(key(b, i));
      if (it == where.end()) continue;
      FrdScanned& s = files[it->second.first];
      s.end = std::min(s.end, it->second.second);
    }
  }
  // Finish what needs it, then decide each block from what is output: the raw files in the run
  // directory with their .jsn.
  enum class Outcome { output, not_output, unknown };
  std::vector<Outcome> outcome(files.size(), Outcome::output);
  for (std::size_t f = 0; f < files.size(); ++f) {
    FrdScanned& s = files[f];
    if (!s.open && s.has_jsn && s.end == s.size) continue;  // untouched
    auto done = finish(s, run_dir, run_number, bu_id);
    if (!done) {
      report.unfinished.push_back(done.error().message());
      // A file in the run directory that could not be rewritten may hold what was to be cut.
      outcome[f] = s.open ? Outcome::not_output : Outcome::unknown;
      continue;
    }
    if (s.size > s.end) report.bytes_cut += s.size - s.end;
    if (done->empty()) continue;
    report.files.push_back(*done);
    report.events_kept += kept(s);
  }
  for (const SalvageBlock& b : in_doubt) {
    std::uint32_t out = 0;
    bool unknown = is_ambiguous(b);
    for (std::uint64_t i = 0; i < b.events; ++i) {
      const auto it = where.find(key(b, i));
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
  if (auto closed = close_run(run_dir, run_number, bu_id); !closed) {
    report.unfinished.push_back(closed.error().message());
  }
  return report;
}

}  // namespace daqflow::apps::output
