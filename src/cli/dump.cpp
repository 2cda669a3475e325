// daqflow dump FILE|DIR... [--events] [--json]: lists and verifies the event files a BU wrote
// (docs/event-builder.md, "Output format"), daqflow's .dqf files, HDF5 files (.h5) and CMS FRD
// .raw files. Each data file is checked record by record against its CRC32Cs, its FED fragments
// and its JSON sidecar (.json, or the FRD file's .jsn) or HDF5 index; files still named .part
// are listed as incomplete and not counted. A directory of FRD files is also checked as a CMS run
// directory (end-of-section and end-of-run records). Exits 1 when anything does not verify.

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "daqflow/apps/fed/event_numbers.hpp"
#include "daqflow/apps/output/event_file.hpp"
#include "daqflow/apps/output/frd.hpp"
#include "daqflow/apps/output/hdf5_file.hpp"
#include "daqflow/wire/evb.hpp"

namespace daqflow::cli {

namespace {

namespace fs = std::filesystem;
using apps::output::EventSummary;
using apps::output::FileContent;
using apps::output::FileReport;

struct DumpArgs {
  std::vector<std::string> paths;
  bool events = false;
  bool json = false;
};

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool is_frd_file(const std::string& name) {
  return ends_with(name, ".raw");
}

bool is_hdf5_file(const std::string& name) {
  return ends_with(name, apps::output::kHdf5Suffix) ||
         ends_with(name,
                   std::string(apps::output::kHdf5Suffix) + std::string(apps::output::kPartSuffix));
}

bool is_event_file(const std::string& name) {
  return ends_with(name, apps::output::kDataSuffix) ||
         ends_with(name, std::string(apps::output::kDataSuffix) +
                             std::string(apps::output::kPartSuffix)) ||
         is_frd_file(name) || is_hdf5_file(name);
}

// The data files named by the arguments: files as given, directories by their *.dqf, *.dqf.part
// and *.raw files, sorted by name; run_dirs receives the directories holding FRD files.
std::vector<std::string> collect(const std::vector<std::string>& paths,
                                 std::vector<std::string>& errors,
                                 std::vector<std::string>& run_dirs) {
  std::vector<std::string> files;
  for (const auto& path : paths) {
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
      std::vector<std::string> found;
      bool frd = false;
      for (const auto& entry : fs::directory_iterator(path, ec)) {
        const std::string name = entry.path().filename().string();
        if (entry.is_regular_file(ec) && is_event_file(name)) {
          found.push_back(entry.path().string());
          frd = frd || is_frd_file(name);
        }
      }
      if (ec) errors.push_back(fmt::format("{}: {}", path, ec.message()));
      if (frd) run_dirs.push_back(path);
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else if (fs::exists(path, ec)) {
      files.push_back(path);
    } else {
      errors.push_back(fmt::format("{}: no such file or directory", path));
    }
  }
  return files;
}

std::string flags_text(std::uint32_t flags) {
  std::string out;
  if ((flags & wire::kEventIncomplete) != 0) out += "incomplete ";
  if ((flags & wire::kEventCorrupted) != 0) out += "corrupted ";
  const std::uint32_t other =
      flags & ~std::uint32_t{wire::kEventIncomplete | wire::kEventCorrupted};
  if (other != 0) out += fmt::format("0x{:x} ", other);
  if (out.empty()) return "-";
  out.pop_back();
  return out;
}

// "0-7,100-107": source ids with runs of consecutive ids folded.
std::string feds_text(const std::vector<std::uint16_t>& feds) {
  std::string out;
  for (std::size_t i = 0; i < feds.size();) {
    std::size_t j = i;
    while (j + 1 < feds.size() && feds[j + 1] == feds[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += j > i ? fmt::format("{}-{}", feds[i], feds[j]) : fmt::format("{}", feds[i]);
    i = j + 1;
  }
  return out.empty() ? "none" : out;
}

nlohmann::json event_json(const EventSummary& e) {
  nlohmann::json j{{"event", e.record.event}, {"size", e.record.size}, {"flags", e.record.flags}};
  if (e.content == FileContent::farm_decisions) {
    j["trigger_bits"] = e.trigger_bits;
    j["output_size"] = e.output_size;
  } else if (e.content == FileContent::timeslices) {
    j["start_ns"] = e.start_ns;
    j["components_expected"] = e.components_expected;
    nlohmann::json components = nlohmann::json::array();
    for (const auto& c : e.components) {
      components.push_back({{"eq_id", c.eq_id},
                            {"microslices", c.microslices},
                            {"content_size", c.content_size},
                            {"first", c.first},
                            {"overlap", c.overlap}});
    }
    j["components"] = std::move(components);
  } else {
    j["pieces"] = e.record.pieces;
    j["feds"] = e.feds;
    j["fed_count"] = e.feds.size();
  }
  if (!e.problem.empty()) j["problem"] = e.problem;
  return j;
}

// One event of a file, as `daqflow dump --events` lists it.
void print_event(const EventSummary& e) {
  if (e.content == FileContent::timeslices) {
    std::uint64_t microslices = 0;
    std::vector<std::uint16_t> eq_ids;
    for (const auto& c : e.components) {
      microslices += c.microslices;
      eq_ids.push_back(c.eq_id);
    }
    std::sort(eq_ids.begin(), eq_ids.end());
    std::printf(
        "  timeslice %llu  start %llu ns  size %llu  components %zu/%u (eq_id %s)  "
        "microslices %llu  flags %s%s\n",
        static_cast<unsigned long long>(e.record.event),
        static_cast<unsigned long long>(e.start_ns), static_cast<unsigned long long>(e.record.size),
        e.components.size(), e.components_expected, feds_text(eq_ids).c_str(),
        static_cast<unsigned long long>(microslices), flags_text(e.record.flags).c_str(),
        e.problem.empty() ? "" : ("  PROBLEM: " + e.problem).c_str());
  } else if (e.content == FileContent::farm_decisions) {
    std::printf("  %s  size %llu  trigger bits %#llx  output %u B%s\n",
                apps::fed::event_name(e.record.event).c_str(),
                static_cast<unsigned long long>(e.record.size),
                static_cast<unsigned long long>(e.trigger_bits), e.output_size,
                e.problem.empty() ? "" : ("  PROBLEM: " + e.problem).c_str());
  } else {
    std::printf("  %s  size %llu  FEDs %s (%zu)  flags %s%s\n",
                apps::fed::event_name(e.record.event).c_str(),
                static_cast<unsigned long long>(e.record.size), feds_text(e.feds).c_str(),
                e.feds.size(), flags_text(e.record.flags).c_str(),
                e.problem.empty() ? "" : ("  PROBLEM: " + e.problem).c_str());
  }
}

// One file's line (and its problems, one a line).
void print_file(const std::string& path, const FileReport& r) {
  const std::string corrupted =
      r.corrupted_events > 0 ? fmt::format(", {} flagged corrupted", r.corrupted_events) : "";
  if (!r.problems.empty()) {
    std::printf("%s: %llu events, %llu bytes%s: %zu problem(s)\n", path.c_str(),
                static_cast<unsigned long long>(r.events), static_cast<unsigned long long>(r.bytes),
                corrupted.c_str(), r.problems.size());
    for (const auto& p : r.problems) std::printf("  %s\n", p.c_str());
  } else if (!r.complete) {
    std::printf("%s: incomplete (being written, or its writer died), %llu events%s; not counted\n",
                path.c_str(), static_cast<unsigned long long>(r.events),
                r.truncated ? ", the last one still being written" : "");
  } else {
    std::printf("%s: run %u, %s, file %u: %llu events, %llu bytes, crc32c %08x%s: verified\n",
                path.c_str(), r.run_number, r.bu_id.c_str(), r.sequence,
                static_cast<unsigned long long>(r.events), static_cast<unsigned long long>(r.bytes),
                r.checksum, corrupted.c_str());
  }
}

nlohmann::json file_json(const FileReport& r, bool frd) {
  return {{"path", r.path},
          {"format", frd                    ? "frd"
                     : is_hdf5_file(r.path) ? "hdf5"
                                            : "dqf"},
          {"complete", r.complete},
          {"run", r.run_number},
          {"bu", r.bu_id},
          {"content", apps::output::to_string(r.content)},
          {"sequence", r.sequence},
          {"events", r.events},
          {"bytes", r.bytes},
          {"checksum", fmt::format("{:08x}", r.checksum)},
          {"corrupted_events", r.corrupted_events},
          {"truncated", r.truncated},
          {"verified", r.verified()},
          {"problems", r.problems}};
}

void dump_command(const DumpArgs& args) {
  std::vector<std::string> errors;
  std::vector<std::string> run_dirs;
  const std::vector<std::string> files = collect(args.paths, errors, run_dirs);
  std::uint64_t events = 0;
  std::uint64_t bytes = 0;
  std::size_t complete = 0;
  std::size_t incomplete = 0;
  std::size_t bad = 0;
  nlohmann::json json_files = nlohmann::json::array();

  for (const auto& path : files) {
    nlohmann::json json_events = nlohmann::json::array();
    const auto on_event = [&](const EventSummary& e) {
      if (!args.events) return;
      if (args.json) {
        json_events.push_back(event_json(e));
      } else {
        print_event(e);
      }
    };
    if (args.events && !args.json) std::printf("%s\n", path.c_str());
    const bool frd = is_frd_file(path);
    const FileReport r = frd                  ? apps::output::check_frd_file(path, on_event)
                         : is_hdf5_file(path) ? apps::output::check_hdf5_file(path, on_event)
                                              : apps::output::check_event_file(path, on_event);
    if (r.complete) {
      ++complete;
      events += r.events;
      bytes += r.bytes;
    } else if (r.problems.empty()) {
      ++incomplete;
    }
    if (!r.problems.empty()) ++bad;

    if (args.json) {
      nlohmann::json f = file_json(r, frd);
      if (args.events) f["event_list"] = std::move(json_events);
      json_files.push_back(std::move(f));
      continue;
    }
    print_file(path, r);
  }

  // FRD run directories: their end-of-section and end-of-run records against the files.
  std::vector<std::string> run_problems;
  for (const auto& dir : run_dirs) {
    for (auto& p : apps::output::check_frd_run(dir)) run_problems.push_back(std::move(p));
  }
  if (!args.json) {
    for (const auto& p : run_problems) std::printf("%s\n", p.c_str());
  }
  bad += run_problems.size();
  const bool all_ok = bad == 0 && errors.empty();
  if (args.json) {
    const nlohmann::json out{{"files", json_files},
                             {"events", events},
                             {"bytes", bytes},
                             {"complete_files", complete},
                             {"incomplete_files", incomplete},
                             {"files_with_problems", bad},
                             {"errors", errors},
                             {"run_problems", run_problems},
                             {"all_verified", all_ok}};
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    for (const auto& e : errors) std::fprintf(stderr, "daqflow dump: %s\n", e.c_str());
    const std::string extra =
        incomplete > 0 ? fmt::format(" ({} incomplete not counted)", incomplete) : "";
    const char* files_word = complete == 1 ? "file" : "files";
    if (all_ok) {
      std::printf("%llu events in %zu %s, all verified%s\n",
                  static_cast<unsigned long long>(events), complete, files_word, extra.c_str());
    } else {
      std::printf("%llu events in %zu %s, %zu with problems%s\n",
                  static_cast<unsigned long long>(events), complete, files_word,
                  bad + errors.size(), extra.c_str());
    }
  }
  if (!all_ok) throw CLI::RuntimeError(1);
}

}  // namespace

void add_dump(CLI::App& app) {
  auto args = std::make_shared<DumpArgs>();
  auto* cmd = app.add_subcommand("dump", "List and verify the event files a BU or an SFC wrote");
  cmd->add_option("paths", args->paths,
                  "data files (.dqf, or CMS FRD .raw) or directories holding them")
      ->required();
  cmd->add_flag("--events", args->events, "list every event: number, size, FEDs, flags");
  cmd->add_flag("--json", args->json, "print the report as JSON");
  cmd->callback([args] { dump_command(*args); });
}

}  // namespace daqflow::cli
