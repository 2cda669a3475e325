// The disk writer's files: opening NAME.dqf.part, finishing it (fsync, rename to NAME.dqf, the
// JSON sidecar), and make_file_output(), which reads the `output` parameter and checks the
// directory at Configure so that a bad path fails the Configure, not the run.

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "daqflow/core/log.hpp"
#include "daqflow/runtime/params.hpp"
#include "daqflow/wire/crc32c.hpp"
#include "file_output.hpp"
#include "file_util.hpp"
#include "outputs.hpp"

namespace daqflow::apps::output {
namespace {

namespace fs = std::filesystem;

std::string errno_text() {
  return std::strerror(errno);
}

}  // namespace

bool FileOutput::reserve_room() {
  reserve_path_ =
      (fs::path(settings_.dir) / reserve_file_name(settings_.run_number, settings_.bu_id)).string();
  const int fd = ::open(reserve_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const int error = fd < 0 ? errno : ::posix_fallocate(fd, 0, static_cast<off_t>(kReserveBytes));
  if (fd >= 0) ::close(fd);
  if (error != 0) {
    WriterCounts::add(counts_.write_errors);
    set_failure(fmt::format("file output: reserving {} bytes in {}: {}", kReserveBytes,
                            reserve_path_, std::strerror(error)));
    return false;
  }
  return true;
}

void FileOutput::release_room() {
  if (!reserve_path_.empty()) ::unlink(reserve_path_.c_str());
  reserve_path_.clear();
}

bool FileOutput::open_file() {
  if (reserve_path_.empty() && !reserve_room()) return false;
  stem_ =
      (fs::path(settings_.dir) / data_file_stem(settings_.run_number, settings_.bu_id, sequence_))
          .string();
  const std::string final_path = stem_ + std::string(kDataSuffix);
  const std::string part_path = final_path + std::string(kPartSuffix);
  if (const std::string taken = taken_name(final_path); !taken.empty()) {
    set_failure("file output: " + taken);
    return false;
  }
  fd_ = ::open(part_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    WriterCounts::add(counts_.write_errors);
    set_failure(fmt::format("file output: creating {}: {}", part_path, errno_text()));
    return false;
  }
  const std::size_t size = encode_file_header(
      FileHeader{kFileVersion, settings_.run_number, sequence_, settings_.bu_id, settings_.content},
      file_header_);
  file_crc_ = wire::crc32c(std::span(file_header_.data(), size));
  limits_.opened(size);
  iov_[iov_count_++] = iovec{file_header_.data(), size};
  return true;
}

bool FileOutput::finish_file() {
  if (!flush()) return false;
  const std::string final_path = stem_ + std::string(kDataSuffix);
  const std::string part_path = final_path + std::string(kPartSuffix);
  if (::fsync(fd_) != 0) {
    WriterCounts::add(counts_.write_errors);
    set_failure(fmt::format("file output: fsync {}: {}", part_path, errno_text()));
    return false;
  }
  ::close(fd_);
  fd_ = -1;
  if (::rename(part_path.c_str(), final_path.c_str()) != 0) {
    WriterCounts::add(counts_.write_errors);
    set_failure(fmt::format("file output: renaming {}: {}", part_path, errno_text()));
    return false;
  }
  if (!write_sidecar()) return false;
  sync_directory(settings_.dir);
  finished_file(final_path, limits_.file_events(), file_crc_);
  WriterCounts::add(counts_.events_written, limits_.file_events());
  WriterCounts::add(counts_.bytes_written, limits_.file_bytes());
  WriterCounts::add(counts_.files_closed);
  ++sequence_;
  return true;
}

bool FileOutput::write_sidecar() {
  Sidecar sidecar;
  sidecar.run = settings_.run_number;
  sidecar.bu = settings_.bu_id;
  sidecar.file = fs::path(stem_ + std::string(kDataSuffix)).filename().string();
  sidecar.events = limits_.file_events();
  sidecar.bytes = limits_.file_bytes();
  sidecar.first_event = first_event_;
  sidecar.last_event = last_event_;
  sidecar.checksum = file_crc_;
  if (settings_.content == FileContent::built_events) sidecar.lumi = limits_.file_lumi();
  const std::string path = stem_ + std::string(kSidecarSuffix);
  const std::string tmp = path + ".tmp";
  std::string error;
  // Written aside and renamed so that a reader never sees half a sidecar.
  if (!write_small_file(tmp, to_json(sidecar).dump(2) + "\n", error) ||
      ::rename(tmp.c_str(), path.c_str()) != 0) {
    if (error.empty()) error = fmt::format("renaming {}: {}", tmp, errno_text());
    WriterCounts::add(counts_.write_errors);
    set_failure("file output: " + error);
    return false;
  }
  return true;
}

namespace {

// A size in MiB (integer or fractional) as bytes; 0 means no limit.
Result<std::uint64_t> mebibytes(const nlohmann::json& params, const char* key) {
  const auto it = params.find(key);
  if (it == params.end()) return std::uint64_t{0};
  if (!it->is_number() || it->get<double>() < 0) {
    return Error(fmt::format("output: '{}' must be a number of MiB >= 0 (0: no limit), got {}", key,
                             runtime::json_text(*it)));
  }
  return static_cast<std::uint64_t>(std::llround(it->get<double>() * 1024.0 * 1024.0));
}

}  // namespace

namespace {

// Makes the directory and checks it writable; refuses files of this run and BU from an earlier
// attempt, unless the BU was started again in its run: then the sequence goes on after them and
// their events count as written.
Result<void> prepare_directory(FileOutputSettings& s, const OutputContext& context,
                               const FileFormat& format) {
  std::error_code ec;
  fs::create_directories(s.dir, ec);
  if (ec)
    return Error(ErrorCode::unavailable,
                 fmt::format("output: creating directory '{}': {}", s.dir, ec.message()));
  if (::access(s.dir.c_str(), W_OK) != 0) {
    return Error(ErrorCode::unavailable,
                 fmt::format("output: directory '{}' is not writable: {}", s.dir, errno_text()));
  }
  // Files of this run and BU from an earlier attempt would be overwritten or mixed in: refuse,
  // unless the BU was started again in this run, which goes on after the last of them.
  const std::string prefix = data_file_stem(s.run_number, s.bu_id, 0);
  const std::string run_prefix = prefix.substr(0, prefix.size() - 4);
  for (const auto& entry : fs::directory_iterator(s.dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(run_prefix, 0) == 0 && context.restarted) {
      if (name.ends_with(format.finished_suffix)) {
        // An earlier process's finished file (the controller's salvage finished the last one
        // before this restart): its events were written in this run, by this BU.
        const auto counts = format.finished_counts(entry.path().string());
        if (counts) {
          s.events_before += counts->first;
          s.bytes_before += counts->second;
        } else {
          spdlog::warn(
              "output: the events of {} (an earlier process's file) are not counted in "
              "events_written: {}",
              entry.path().string(), counts.error().message());
        }
      }
      std::uint32_t seq = 0;
      const auto digits = name.substr(run_prefix.size(), name.find('.') - run_prefix.size());
      const auto [end, err] = std::from_chars(digits.data(), digits.data() + digits.size(), seq);
      if (err == std::errc() && end == digits.data() + digits.size()) {
        s.first_sequence = std::max(s.first_sequence, seq + 1);
      }
      continue;
    }
    if (name.rfind(run_prefix, 0) == 0) {
      return Error(ErrorCode::conflict,
                   fmt::format("output: '{}' already holds files of run {} from {} ({}): remove "
                               "them or change run.number",
                               s.dir, s.run_number, s.bu_id, name));
    }
  }
  if (ec)
    return Error(ErrorCode::unavailable,
                 fmt::format("output: reading directory '{}': {}", s.dir, ec.message()));
  return ok();
}

}  // namespace

Result<FileOutputSettings> read_file_output_settings(const nlohmann::json& params,
                                                     const OutputContext& context,
                                                     const FileFormat& format) {
  if (!params.is_object()) {
    return Error(fmt::format("output: expected {{kind: {}, ...}}, got {}", format.kind,
                             runtime::json_text(params)));
  }
  for (const auto& [key, value] : params.items()) {
    // The BU's output spec fills in the other kinds' keys with their defaults: not set.
    if (std::find(format.keys.begin(), format.keys.end(), key) != format.keys.end()) continue;
    if ((key == "sfc" && value == "") || (key == "events_per_file" && value == 400) ||
        (key == "incomplete" && value == "drop") || (key == "compression" && value == "none") ||
        (key == "compression_level" && value == 1)) {
      continue;
    }
    std::string known;
    for (const char* k : format.keys) {
      if (std::string_view(k) == "kind") continue;
      known += known.empty() ? k : std::string(", ") + k;
    }
    return Error(
        fmt::format("output: unknown key '{}' for kind {} (known: {})", key, format.kind, known));
  }
  FileOutputSettings s;
  s.run_number = context.run_number;
  s.bu_id = context.bu_id;
  s.queue_depth = std::max<std::size_t>(1, context.queue_depth);
  s.content = context.content;
  s.dir = context.default_dir;
  if (const auto it = params.find("dir"); it != params.end()) {
    if (!it->is_string())
      return Error("output: 'dir' must be a string, got " + runtime::json_text(*it));
    // An empty dir (a parameter default) means run.output.
    if (!it->get_ref<const std::string&>().empty()) s.dir = it->get<std::string>();
  }
  if (s.dir.empty()) return Error("output: no directory: set output.dir or run.output");
  if (s.bu_id.empty() || s.bu_id.size() > kMaxBuIdLength ||
      s.bu_id.find_first_of("/\\") != std::string::npos) {
    return Error(fmt::format("output: BU id '{}' cannot name files", s.bu_id));
  }
  auto file_mb = mebibytes(params, "max_file_mb");
  if (!file_mb) return file_mb.error();
  s.max_file_bytes = *file_mb;
  auto total_mb = mebibytes(params, "max_total_mb");
  if (!total_mb) return total_mb.error();
  s.max_total_bytes = *total_mb;
  if (const auto it = params.find("max_file_events"); it != params.end()) {
    if (!it->is_number_integer() || it->get<std::int64_t>() < 0) {
      return Error("output: 'max_file_events' must be an integer >= 0 (0: no limit), got " +
                   runtime::json_text(*it));
    }
    s.max_file_events = static_cast<std::uint64_t>(it->get<std::int64_t>());
  }

  if (auto r = prepare_directory(s, context, format); !r) return r.error();
  return s;
}

Result<std::unique_ptr<EventOutput>> make_file_output(const nlohmann::json& params,
                                                      const OutputContext& context) {
  const FileFormat format{
      "file",
      {"kind", "dir", "max_file_mb", "max_file_events", "max_total_mb"},
      kSidecarSuffix,
      [](const std::string& path) -> Result<std::pair<std::uint64_t, std::uint64_t>> {
        auto sidecar = read_sidecar(path);
        if (!sidecar) return sidecar.error();
        return std::pair{sidecar->events, sidecar->bytes};
      }};
  auto s = read_file_output_settings(params, context, format);
  if (!s) return s.error();
  return std::unique_ptr<EventOutput>(std::make_unique<FileOutput>(std::move(*s)));
}

}  // namespace daqflow::apps::output
