#include "frd_output.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "daqflow/apps/fed/event_numbers.hpp"
#include "daqflow/apps/output/event_file.hpp"
#include "daqflow/core/log.hpp"
#include "daqflow/runtime/params.hpp"
#include "daqflow/wire/crc32c.hpp"
#include "daqflow/wire/evb.hpp"
#include "file_util.hpp"
#include "outputs.hpp"

namespace daqflow::apps::output {
namespace {

namespace fs = std::filesystem;

}  // namespace

FrdOutput::FrdOutput(FrdOutputSettings settings)
    : ThreadedOutput(settings.queue_depth),
      settings_(std::move(settings)),
      run_dir_((fs::path(settings_.dir) / frd_run_dir(settings_.run_number)).string()),
      open_dir_((fs::path(run_dir_) / "open").string()),
      headers_(kMaxIov) {}

FrdOutput::~FrdOutput() {
  const auto closed = close();
  if (!closed) spdlog::error("FRD output: {}", closed.error().message());
}

Result<std::unique_ptr<FrdOutput>> FrdOutput::create(FrdOutputSettings settings) {
  std::unique_ptr<FrdOutput> out(new FrdOutput(std::move(settings)));
  const std::string& run_dir = out->run_dir_;
  std::error_code ec;
  if (fs::exists(run_dir, ec)) {
    return Error(ErrorCode::conflict,
                 fmt::format("output: '{}' exists already (files of run {} from an earlier "
                             "attempt): remove it or change run.number",
                             run_dir, out->settings_.run_number));
  }
  fs::create_directories(out->open_dir_, ec);
  if (!ec) fs::create_directories(fs::path(run_dir) / "jsd", ec);
  if (ec)
    return Error(ErrorCode::unavailable,
                 fmt::format("output: creating '{}': {}", run_dir, ec.message()));
  std::string error;
  const fs::path jsd = fs::path(run_dir) / "jsd";
  if (!write_small_file((jsd / "rawData.jsd").string(), kFrdRawDataJsd, error) ||
      !write_small_file((jsd / "EoLS.jsd").string(), kFrdEolsJsd, error) ||
      !write_small_file((jsd / "EoR.jsd").string(), kFrdEorJsd, error) ||
      !write_small_file((fs::path(run_dir) / "fu.lock").string(), "1 0", error)) {
    return Error("output: " + error);
  }
  out->start();
  return out;
}

void FrdOutput::fail_io(const std::string& what) {
  WriterCounts::add(counts_.write_errors);
  set_failure("FRD output: " + what);
}

void FrdOutput::end_batch() {
  (void)flush();
}

void FrdOutput::write_event(std::span<const EventPiece> pieces, const BuiltEvent& event) {
  const std::uint32_t lumi = event.lumi;
  const std::uint32_t per_file =
      std::min<std::uint32_t>(settings_.events_per_file, kMaxRawFileEvents);
  if (fd_ >= 0 && (file_lumi_ != lumi || file_events_ >= per_file) && !finish_file()) return;
  if (lumi > highest_lumi_) {
    // Every section before this one is over at this BU (blocks come in the EVM's order),
    // sections without an event here included.
    for (std::uint32_t l = highest_lumi_ == 0 ? 1 : highest_lumi_; l < lumi; ++l) {
      if (!sections_[l].closed && !write_eols(l)) return;
    }
    highest_lumi_ = lumi;
  }
  Section& section = sections_[lumi];
  if (section.closed && !section.reopened) {
    section.reopened = true;
    spdlog::warn(
        "FRD output of {}: {} of luminosity section {}, whose EoLS is written "
        "(a re-assigned block): a new file, the EoLS again at the end of the run",
        settings_.bu_id, fed::event_name(event.number), lumi);
  }
  if ((event.flags & wire::kEventIncomplete) != 0 &&
      settings_.incomplete == IncompleteEvents::drop) {
    // The HLT expects every FED of an event: one without some RU's data is lost to it.
    ++section.lost;
    WriterCounts::add(counts_.events_dropped);
    return;
  }
  if (fd_ < 0 && !open_file(lumi)) return;

  std::uint64_t size = 0;
  std::uint32_t crc = 0;
  for (const EventPiece& piece : pieces) {
    size += piece.size;
    crc = wire::crc32c({piece.data, piece.size}, crc);
  }
  if (size > UINT32_MAX) {
    set_failure(
        fmt::format("FRD output: {} has {} bytes, more than an FRD event can "
                    "count",
                    fed::event_name(event.number), size));
    return;
  }
  if ((iov_count_ + 1 + pieces.size() > kMaxIov || header_count_ == headers_.size()) && !flush())
    return;
  auto& header = headers_[header_count_++];
  encode_frd_header(
      FrdHeader{kFrdVersion, 0, settings_.run_number, lumi,
                static_cast<std::uint32_t>(event.number), static_cast<std::uint32_t>(size), crc},
      header);
  iov_[iov_count_++] = iovec{header.data(), header.size()};
  body_crc_ = crc32c_combine(wire::crc32c(header, body_crc_), crc, size);
  for (const EventPiece& piece : pieces) {
    if (piece.size == 0) continue;
    if (iov_count_ == kMaxIov && !flush()) return;
    // writev() takes non-const iovecs but only reads the memory.
    iov_[iov_count_++] = iovec{const_cast<std::byte*>(piece.data), piece.size};
  }
  ++file_events_;
  file_bytes_ += kFrdHeaderSize + size;
}

bool FrdOutput::flush() {
  const int error = writev_all(fd_, iov_.data(), iov_count_);
  iov_count_ = header_count_ = 0;
  if (error != 0) {
    fail_io(fmt::format("writing {}: {}", open_dir_, std::strerror(error)));
    return false;
  }
  return true;
}

bool FrdOutput::open_file(std::uint32_t lumi) {
  Section& section = sections_[lumi];
  file_lumi_ = lumi;
  file_index_ = section.next_index++;
  const std::string path =
      (fs::path(open_dir_) / (frd_data_stem(settings_.run_number, lumi, file_index_) + ".raw"))
          .string();
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    fail_io(fmt::format("creating {}: {}", path, std::strerror(errno)));
    return false;
  }
  // The header's counts are known at the end: room for it now, written then.
  if (::lseek(fd_, static_cast<off_t>(kRawFileHeaderSize), SEEK_SET) < 0) {
    fail_io(fmt::format("seeking in {}: {}", path, std::strerror(errno)));
    return false;
  }
  file_events_ = 0;
  file_bytes_ = kRawFileHeaderSize;
  body_crc_ = 0;
  return true;
}

bool FrdOutput::finish_file() {
  if (!flush()) return false;
  const std::string stem = frd_data_stem(settings_.run_number, file_lumi_, file_index_);
  const std::string open_path = (fs::path(open_dir_) / (stem + ".raw")).string();
  std::array<std::byte, kRawFileHeaderSize> header{};
  encode_raw_file_header(
      RawFileHeader{static_cast<std::uint16_t>(file_events_), file_lumi_, file_bytes_}, header);
  if (::pwrite(fd_, header.data(), header.size(), 0) != static_cast<ssize_t>(header.size()) ||
      ::fsync(fd_) != 0) {
    fail_io(fmt::format("finishing {}: {}", open_path, std::strerror(errno)));
    return false;
  }
  ::close(fd_);
  fd_ = -1;
  const std::string path = (fs::path(run_dir_) / (stem + ".raw")).string();
  if (::rename(open_path.c_str(), path.c_str()) != 0) {
    fail_io(fmt::format("renaming {}: {}", open_path, std::strerror(errno)));
    return false;
  }
  if (!write_json(stem + ".jsn", "rawData.jsd", {file_events_, file_bytes_})) return false;
  finished_file(path, file_events_,
                crc32c_combine(wire::crc32c(header), body_crc_, file_bytes_ - kRawFileHeaderSize));
  Section& section = sections_[file_lumi_];
  section.events += file_events_;
  section.bytes += file_bytes_;
  ++section.files;
  WriterCounts::add(counts_.events_written, file_events_);
  WriterCounts::add(counts_.bytes_written, file_bytes_);
  WriterCounts::add(counts_.files_closed);
  return true;
}

bool FrdOutput::write_json(const std::string& name, const std::string& legend_file,
                           const std::vector<std::uint64_t>& values) {
  std::string error;
  if (!write_file_then_rename((fs::path(run_dir_) / name).string(),
                              frd_json_text(run_dir_, legend_file, values, settings_.bu_id),
                              error)) {
    fail_io(error);
    return false;
  }
  return true;
}

bool FrdOutput::write_eols(std::uint32_t lumi) {
  Section& s = sections_[lumi];
  // Events of this section at this BU: those written, all it built (written or not) and those
  // lost to the HLT (incomplete ones, with incomplete: drop).
  if (!write_json(frd_eols_name(settings_.run_number, lumi), "EoLS.jsd",
                  {s.events, s.files, s.events + s.lost, s.lost, s.bytes})) {
    return false;
  }
  s.closed = true;
  return true;
}

void FrdOutput::finish() {
  if (fd_ >= 0 && !failed_) (void)finish_file();
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
  if (failed_) return;
  std::uint64_t events = 0;
  std::uint64_t files = 0;
  std::uint64_t lumis = 0;
  std::uint32_t last = 0;
  for (auto& [lumi, s] : sections_) {
    if ((!s.closed || s.reopened) && !write_eols(lumi)) return;
    events += s.events;
    files += s.files;
    if (s.files > 0) {
      ++lumis;
      last = lumi;
    }
  }
  if (!write_json(frd_eor_name(settings_.run_number), "EoR.jsd", {events, files, lumis, last}))
    return;
  std::error_code ec;
  fs::remove(open_dir_, ec);  // empty by now
  sync_directory(run_dir_);
}

Result<std::unique_ptr<EventOutput>> make_frd_output(const nlohmann::json& params,
                                                     const OutputContext& context) {
  FrdOutputSettings s;
  s.run_number = context.run_number;
  s.bu_id = context.bu_id;
  s.queue_depth = context.queue_depth;
  const std::string dir = params.value("dir", std::string());
  // One directory per BU, as each CMS BU has its own disk.
  s.dir = dir.empty() ? (fs::path(context.default_dir) / context.bu_id).string() : dir;
  const auto per_file = params.value("events_per_file", std::int64_t{400});
  if (per_file < 1 || per_file > kMaxRawFileEvents) {
    return Error(
        fmt::format("output: events_per_file {} is outside 1..{} (an FRD file header "
                    "counts its events in 16 bits)",
                    per_file, kMaxRawFileEvents));
  }
  s.events_per_file = static_cast<std::uint32_t>(per_file);
  const auto incomplete = params.value("incomplete", std::string("drop"));
  if (incomplete != "drop" && incomplete != "write") {
    return Error("output: incomplete '" + incomplete + "' is neither drop nor write");
  }
  s.incomplete = incomplete == "write" ? IncompleteEvents::write : IncompleteEvents::drop;
  auto out = FrdOutput::create(std::move(s));
  if (!out) return out.error();
  return std::unique_ptr<EventOutput>(std::move(*out));
}

}  // namespace daqflow::apps::output
