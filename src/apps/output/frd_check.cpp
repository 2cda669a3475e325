// `daqflow dump` for FRD files (include/daqflow/apps/output/frd.hpp): every event and file, and the
// run's end-of-section and end-of-run records against them.

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "daqflow/apps/output/frd.hpp"
#include "daqflow/wire/crc32c.hpp"
#include "event_checks.hpp"

namespace daqflow::apps::output {
namespace {

namespace fs = std::filesystem;

// The "data" array of a CMS JSON file as numbers (they are written as strings).
bool read_data(const fs::path& path, std::vector<std::uint64_t>& out, std::string& error) {
  std::ifstream in(path);
  if (!in) {
    error = fmt::format("{}: missing", path.string());
    return false;
  }
  try {
    const auto doc = nlohmann::json::parse(in);
    out.clear();
    for (const auto& v : doc.at("data")) {
      out.push_back(v.is_string() ? std::stoull(v.get<std::string>()) : v.get<std::uint64_t>());
    }
  } catch (const std::exception& e) {
    error = fmt::format("{}: not a CMS JSON file: {}", path.string(), e.what());
    return false;
  }
  return true;
}

std::string source_of(const fs::path& path) {
  std::ifstream in(path);
  try {
    const auto doc = nlohmann::json::parse(in);
    const std::string source = doc.value("source", std::string());
    return source.rfind("BU-", 0) == 0 ? source.substr(3) : source;
  } catch (const std::exception&) {
    return {};
  }
}

}  // namespace

FileReport check_frd_file(const std::string& path,
                          const std::function<void(const EventSummary&)>& on_event) {
  FileReport report;
  report.path = path;
  const auto name = parse_frd_data_name(fs::path(path).filename().string());
  if (!name) {
    report.problems.push_back(fmt::format("{}: not named runNNNNNN_lsNNNN_indexNNNNNN.raw", path));
    return report;
  }
  report.run_number = name->run;
  const std::uint32_t lumi = name->lumi;
  report.sequence = name->index;
  const fs::path jsn = fs::path(path).replace_extension(".jsn");
  std::error_code ec;
  report.complete = fs::exists(jsn, ec);
  if (report.complete) report.bu_id = source_of(jsn);

  std::ifstream in(path, std::ios::binary);
  if (!in) {
    report.problems.push_back(fmt::format("{}: cannot open", path));
    return report;
  }
  const std::vector<char> raw((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
  const std::span<const std::byte> file(reinterpret_cast<const std::byte*>(raw.data()), raw.size());
  report.bytes = file.size();
  report.checksum = wire::crc32c(file);
  RawFileHeader header;
  if (const FrdStatus s = decode_raw_file_header(file, header); s != FrdStatus::ok) {
    report.problems.push_back(fmt::format("{}: file header: {}", path, to_string(s)));
    return report;
  }
  if (header.lumi != lumi) {
    report.problems.push_back(fmt::format("{}: the header says luminosity section {}, the name {}",
                                          path, header.lumi, lumi));
  }
  if (header.file_size != file.size()) {
    report.problems.push_back(fmt::format("{}: the header says {} bytes, the file has {}", path,
                                          header.file_size, file.size()));
  }
  std::vector<wire::FedFragmentInfo> infos;
  std::size_t at = kRawFileHeaderSize;
  while (at < file.size()) {
    FrdHeader frd;
    const FrdStatus s = decode_frd_header(file.subspan(at), frd);
    if (s != FrdStatus::ok || frd.size > file.size() - at - kFrdHeaderSize) {
      report.problems.push_back(fmt::format(
          "{}: byte {}: {}", path, at,
          s != FrdStatus::ok ? std::string(to_string(s)) : "event runs past the file end"));
      break;
    }
    EventSummary summary;
    summary.record.event = frd.event;
    summary.record.size = frd.size;
    summary.record.crc32c = frd.crc32c;
    summary.data_offset = at + kFrdHeaderSize;
    const std::span<const std::byte> data = file.subspan(at + kFrdHeaderSize, frd.size);
    const std::uint32_t crc = wire::crc32c(data);
    if (frd.run != report.run_number || frd.lumi != lumi) {
      summary.problem = fmt::format("run {} section {} in a file of run {} section {}", frd.run,
                                    frd.lumi, report.run_number, lumi);
    } else if (crc != frd.crc32c) {
      locate_damage(data, summary, infos);
      summary.problem =
          fmt::format("CRC32C mismatch (header {:08x}, computed {:08x}){}", frd.crc32c, crc,
                      summary.problem.empty() ? "" : "; " + summary.problem);
    } else {
      check_fragments(data, summary, infos);
    }
    if (!summary.problem.empty()) {
      report.problems.push_back(fmt::format("{}: event {}: {}", path, frd.event, summary.problem));
    }
    ++report.events;
    at += kFrdHeaderSize + frd.size;
    if (on_event) on_event(summary);
  }
  if (report.events != header.events) {
    report.problems.push_back(fmt::format("{}: the header counts {} events, the file holds {}",
                                          path, header.events, report.events));
  }
  if (report.complete) {
    std::vector<std::uint64_t> data;
    std::string error;
    if (!read_data(jsn, data, error) || data.size() < 2) {
      report.problems.push_back(error.empty() ? fmt::format("{}: fewer than 2 values", jsn.string())
                                              : error);
    } else if (data[0] != report.events || data[1] != report.bytes) {
      report.problems.push_back(
          fmt::format("{}: says {} events and {} bytes, the file holds {} "
                      "and {}",
                      jsn.string(), data[0], data[1], report.events, report.bytes));
    }
  }
  return report;
}

std::vector<std::string> check_frd_run(const std::string& run_dir) {
  std::vector<std::string> problems;
  struct Section {
    std::uint64_t events = 0;
    std::uint64_t bytes = 0;
    std::vector<std::uint32_t> indexes;
  };
  std::map<std::uint32_t, Section> sections;
  std::uint32_t run = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(run_dir, ec)) {
    const auto name = parse_frd_data_name(entry.path().filename().string());
    if (!name) continue;
    run = name->run;
    Section& s = sections[name->lumi];
    s.indexes.push_back(name->index);
    std::vector<std::uint64_t> data;
    std::string error;
    if (read_data(entry.path().parent_path() / (entry.path().stem().string() + ".jsn"), data,
                  error) &&
        data.size() >= 2) {
      s.events += data[0];
      s.bytes += data[1];
    }
  }
  if (sections.empty()) return problems;
  std::uint64_t events = 0;
  std::uint64_t files = 0;
  std::uint32_t last = 0;
  for (auto& [lumi, s] : sections) {
    std::sort(s.indexes.begin(), s.indexes.end());
    for (std::size_t i = 0; i < s.indexes.size(); ++i) {
      if (s.indexes[i] != i) {
        problems.push_back(fmt::format("{}: section {}: file index {} missing", run_dir, lumi, i));
        break;
      }
    }
    const fs::path eols = fs::path(run_dir) / frd_eols_name(run, lumi);
    std::vector<std::uint64_t> data;
    std::string error;
    if (!read_data(eols, data, error) || data.size() < 5) {
      problems.push_back(error.empty() ? fmt::format("{}: fewer than 5 values", eols.string())
                                       : error);
    } else if (data[0] != s.events || data[1] != s.indexes.size() || data[4] != s.bytes) {
      problems.push_back(fmt::format(
          "{}: says {} events in {} files ({} bytes); the files hold "
          "{} in {} ({} bytes)",
          eols.string(), data[0], data[1], data[4], s.events, s.indexes.size(), s.bytes));
    }
    events += s.events;
    files += s.indexes.size();
    last = lumi;
  }
  const fs::path eor = fs::path(run_dir) / frd_eor_name(run);
  std::vector<std::uint64_t> data;
  std::string error;
  if (!read_data(eor, data, error) || data.size() < 4) {
    problems.push_back(error.empty() ? fmt::format("{}: fewer than 4 values", eor.string())
                                     : error);
  } else if (data[0] != events || data[1] != files || data[2] != sections.size() ||
             data[3] != last) {
    problems.push_back(fmt::format(
        "{}: says {} events, {} files, {} sections, the last {}; the "
        "files hold {}, {}, {}, {}",
        eor.string(), data[0], data[1], data[2], data[3], events, files, sections.size(), last));
  }
  return problems;
}

}  // namespace daqflow::apps::output
