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
#include "salvage_core.hpp"

namespace daqflow::apps::output {
namespace {

namespace fs = std::filesystem;

// A raw file as found, beside what the salvage core decides on.
struct FrdFound {
  std::string path;  // where it is: in open/ or the run directory
  bool open = false;
  std::uint32_t lumi = 0;
  std::uint32_t index = 0;
};

// The core's key of an event: its section and its number (the id's low 32 bits).
std::uint64_t frd_key(std::uint32_t lumi, std::uint32_t event) {
  return std::uint64_t{lumi} << 32 | event;
}

// Keeps records while their FRD header and CRC-32C check.
SalvageFile scan(const FrdFound& found, std::uint32_t run) {
  SalvageFile s;
  s.end = kRawFileHeaderSize;
  std::ifstream in(found.path, std::ios::binary);
  const std::vector<char> raw((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
  const std::span<const std::byte> file(reinterpret_cast<const std::byte*>(raw.data()), raw.size());
  s.size = file.size();
  std::uint64_t at = kRawFileHeaderSize;
  while (at + kFrdHeaderSize <= file.size()) {
    FrdHeader h;
    if (decode_frd_header(file.subspan(at), h) != FrdStatus::ok || h.run != run ||
        h.lumi != found.lumi || h.size > file.size() - at - kFrdHeaderSize ||
        wire::crc32c(file.subspan(at + kFrdHeaderSize, h.size)) != h.crc32c) {
      break;
    }
    const std::uint64_t end = at + kFrdHeaderSize + h.size;
    s.records.push_back({frd_key(found.lumi, h.event), at, end});
    at = end;
    s.end = end;
  }
  return s;
}

// Truncates to s.end and finishes the file in the run directory (raw header, .jsn), or removes
// it when nothing is left. Returns its path there, or "" when removed.
Result<std::string> finish(const FrdFound& found, const SalvageFile& s, const std::string& run_dir,
                           std::uint32_t run, std::string_view bu_id) {
  const std::string stem = frd_data_stem(run, found.lumi, found.index);
  const std::string final_path = (fs::path(run_dir) / (stem + ".raw")).string();
  const std::string jsn = (fs::path(run_dir) / (stem + ".jsn")).string();
  const std::size_t events = s.kept();
  if (events == 0) {
    std::error_code ec;
    fs::remove(found.path, ec);
    fs::remove(jsn, ec);
    return std::string();
  }
  core::UniqueFd fd(::open(found.path.c_str(), O_WRONLY | O_CLOEXEC));
  std::array<std::byte, kRawFileHeaderSize> header{};
  encode_raw_file_header(
      RawFileHeader{static_cast<std::uint16_t>(std::min<std::size_t>(events, kMaxRawFileEvents)),
                    found.lumi, s.end},
      header);
  if (!fd || ::ftruncate(fd.get(), static_cast<off_t>(s.end)) != 0 ||
      ::pwrite(fd.get(), header.data(), header.size(), 0) != static_cast<ssize_t>(header.size()) ||
      ::fsync(fd.get()) != 0) {
    return Error(code_of_errno(errno),
                 fmt::format("salvage: finishing {}: {}", found.path, std::strerror(errno)));
  }
  if (found.open && ::rename(found.path.c_str(), final_path.c_str()) != 0) {
    return Error(code_of_errno(errno),
                 fmt::format("salvage: renaming {}: {}", found.path, std::strerror(errno)));
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
  // In the order written (section, index), each as found beside what the core decides on.
  std::vector<std::pair<FrdFound, SalvageFile>> scanned;
  std::error_code ec;
  for (const bool open : {false, true}) {
    const fs::path dir = open ? fs::path(run_dir) / "open" : fs::path(run_dir);
    if (!fs::exists(dir, ec)) continue;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      const auto name = parse_frd_data_name(entry.path().filename().string());
      if (!name) continue;
      const bool has_jsn =
          !open &&
          fs::exists(entry.path().parent_path() / (entry.path().stem().string() + ".jsn"), ec);
      if (!open && has_jsn && !doubt_sections.contains(name->lumi)) continue;
      FrdFound found{entry.path().string(), open, name->lumi, name->index};
      SalvageFile file = scan(found, run_number);
      // Finished: in the run directory with its .jsn. In the output where it cannot be
      // rewritten: any file in the run directory (it may hold what was to be cut).
      file.finished = has_jsn;
      file.in_output = !open;
      scanned.emplace_back(std::move(found), std::move(file));
    }
  }
  if (ec)
    return Error(ErrorCode::unavailable,
                 fmt::format("salvage: reading {}: {}", run_dir, ec.message()));
  std::sort(scanned.begin(), scanned.end(), [](const auto& a, const auto& b) {
    return std::pair(a.first.lumi, a.first.index) < std::pair(b.first.lumi, b.first.index);
  });
  std::vector<SalvageFile> files;
  for (auto& [found, file] : scanned) files.push_back(std::move(file));
  // A number found twice in a section (a resync repeated it) is ambiguous: the core leaves a
  // block that has one in doubt.
  SalvageReport report = settle(
      files, in_doubt,
      [](const SalvageBlock& b, std::uint64_t i) {
        return frd_key(b.lumi, static_cast<std::uint32_t>(b.first_event + i));
      },
      {},
      [&](std::size_t f) {
        return finish(scanned[f].first, files[f], run_dir, run_number, bu_id);
      });
  if (auto closed = close_run(run_dir, run_number, bu_id); !closed) {
    report.unfinished.push_back(closed.error().message());
  }
  return report;
}

}  // namespace daqflow::apps::output
