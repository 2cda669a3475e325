#include "microslice_replay.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

#include "daqflow/apps/output/event_file.hpp"
#include "daqflow/wire/endian.hpp"

namespace daqflow::apps::timeslice {

namespace {

namespace fs = std::filesystem;

bool read_at(int fd, std::byte* out, std::uint64_t size, std::uint64_t offset) {
  while (size > 0) {
    const ssize_t n = ::pread(fd, out, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    out += n;
    size -= static_cast<std::uint64_t>(n);
    offset += static_cast<std::uint64_t>(n);
  }
  return true;
}

// The archive files at path: the file itself, or a folder's complete *.dqf files by name.
Result<std::vector<std::string>> archive_files(const std::string& path) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) {
    if (!fs::is_regular_file(path, ec))
      return Error(ErrorCode::not_found, path + ": no such file or folder");
    return std::vector<std::string>{path};
  }
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(path, ec)) {
    if (entry.is_regular_file(ec) && entry.path().extension() == output::kDataSuffix) {
      files.push_back(entry.path().string());
    }
  }
  if (ec) return Error(ErrorCode::unavailable, path + ": " + ec.message());
  if (files.empty())
    return Error(ErrorCode::not_found, path + ": no archive file (*.dqf) in this folder");
  std::sort(files.begin(), files.end());
  return files;
}

std::string geometry_text(const Geometry& g) {
  return fmt::format("{} ns microslices, {} in the core, {} of overlap", g.microslice_ns, g.core,
                     g.overlap);
}

}  // namespace

MicrosliceReplay::MicrosliceReplay(MicrosliceReplay&& other) noexcept {
  *this = std::move(other);
}

MicrosliceReplay& MicrosliceReplay::operator=(MicrosliceReplay&& other) noexcept {
  if (this != &other) {
    close_files();
    core_ = other.core_;
    fds_ = std::move(other.fds_);
    entries_ = std::move(other.entries_);
    largest_interval_ = other.largest_interval_;
    largest_microslice_ = other.largest_microslice_;
    other.fds_.clear();
    other.entries_.clear();
  }
  return *this;
}

MicrosliceReplay::~MicrosliceReplay() {
  close_files();
}

void MicrosliceReplay::close_files() {
  for (const int fd : fds_) ::close(fd);
  fds_.clear();
}

Result<MicrosliceReplay> MicrosliceReplay::open(const std::string& path, std::uint16_t eq_id,
                                                const Geometry& geometry) {
  auto files = archive_files(path);
  if (!files) return files.error();
  MicrosliceReplay replay;
  replay.core_ = geometry.core;
  std::vector<std::byte> descriptors(std::size_t{geometry.core} * wire::kMicrosliceDescriptorSize);
  for (const std::string& file : *files) {
    const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      return Error(code_of_errno(errno),
                   fmt::format("{}: cannot open: {}", file, std::strerror(errno)));
    replay.fds_.push_back(fd);
    std::string problem;
    std::vector<Entry> found;
    const output::FileReport report =
        output::check_event_file(file, [&](const output::EventSummary& e) {
          if (!problem.empty() || !e.problem.empty()) return;
          const Geometry recorded{e.microslice_ns, e.core_microslices, e.overlap_microslices};
          if (recorded != geometry) {
            problem = fmt::format("timeslice {} has {}; this input has {}", e.record.event,
                                  geometry_text(recorded), geometry_text(geometry));
            return;
          }
          const auto c =
              std::find_if(e.components.begin(), e.components.end(),
                           [&](const output::ComponentSummary& s) { return s.eq_id == eq_id; });
          if (c == e.components.end()) {
            problem =
                fmt::format("timeslice {} has no component of eq_id {} (its input was missing)",
                            e.record.event, eq_id);
            return;
          }
          Entry entry;
          entry.index = e.record.event;
          entry.file = static_cast<int>(replay.fds_.size() - 1);
          entry.descriptors_at = e.data_offset + c->offset + wire::kContributionSize;
          entry.contents_at = entry.descriptors_at +
                              std::uint64_t{c->microslices} * wire::kMicrosliceDescriptorSize;
          found.push_back(entry);
        });
    if (report.content != output::FileContent::timeslices && report.problems.empty()) {
      return Error(
          fmt::format("{}: holds {}, not timeslices", file, output::to_string(report.content)));
    }
    if (!report.verified()) {
      return Error(report.problems.empty() ? file + ": incomplete (no sidecar)"
                                           : report.problems.front());
    }
    if (!problem.empty()) return Error(file + ": " + problem);
    // The core's content bytes and largest microslice, from its descriptors.
    for (Entry& entry : found) {
      if (!read_at(fd, descriptors.data(), descriptors.size(), entry.descriptors_at)) {
        return Error(
            fmt::format("{}: timeslice {}: cannot read its descriptors", file, entry.index));
      }
      for (std::uint32_t j = 0; j < geometry.core; ++j) {
        const std::uint32_t size = wire::load_le32(
            descriptors.data() + std::size_t{j} * wire::kMicrosliceDescriptorSize + 20);
        entry.content_bytes += size;
        replay.largest_microslice_ = std::max(replay.largest_microslice_, size);
      }
      replay.largest_interval_ =
          std::max(replay.largest_interval_, descriptors.size() + entry.content_bytes);
      replay.entries_.push_back(entry);
    }
  }
  // Timeslice order; a timeslice written twice (round robin across a builder's death) once.
  std::stable_sort(replay.entries_.begin(), replay.entries_.end(),
                   [](const Entry& a, const Entry& b) { return a.index < b.index; });
  replay.entries_.erase(
      std::unique(replay.entries_.begin(), replay.entries_.end(),
                  [](const Entry& a, const Entry& b) { return a.index == b.index; }),
      replay.entries_.end());
  return replay;
}

bool MicrosliceReplay::read(std::size_t i, std::span<std::byte> out,
                            std::uint64_t& content_bytes) const {
  if (i >= entries_.size()) return false;
  const Entry& e = entries_[i];
  const std::uint64_t descriptors = std::uint64_t{core_} * wire::kMicrosliceDescriptorSize;
  if (out.size() < descriptors + e.content_bytes) return false;
  const int fd = fds_[static_cast<std::size_t>(e.file)];
  if (!read_at(fd, out.data(), descriptors, e.descriptors_at) ||
      !read_at(fd, out.data() + descriptors, e.content_bytes, e.contents_at)) {
    return false;
  }
  content_bytes = e.content_bytes;
  return true;
}

}  // namespace daqflow::apps::timeslice
