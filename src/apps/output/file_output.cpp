// The disk writer's queues, thread and per-event path (file_output.hpp). Opening, closing and
// naming files is in file_output_files.cpp.

#include "file_output.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "daqflow/apps/fed/event_numbers.hpp"
#include "daqflow/core/log.hpp"
#include "daqflow/wire/crc32c.hpp"
#include "file_util.hpp"

namespace daqflow::apps::output {

FileOutput::FileOutput(FileOutputSettings settings)
    : ThreadedOutput(settings.queue_depth),
      settings_(std::move(settings)),
      record_headers_(kMaxIov),
      sequence_(settings_.first_sequence) {
  start(settings_.events_before, settings_.bytes_before);
}

FileOutput::~FileOutput() {
  const auto closed = close();
  if (!closed) spdlog::error("file output: {}", closed.error().message());
}

void FileOutput::finish() {
  if (fd_ >= 0 && !failed_) (void)finish_file();
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
  // A failed output keeps its room: the salvage of its files needs it on a full disk.
  if (!failed_) release_room();
}

void FileOutput::end_batch() {
  (void)flush();
}

void FileOutput::write_event(std::span<const EventPiece> pieces, const BuiltEvent& event) {
  std::uint64_t size = 0;
  for (const EventPiece& piece : pieces) size += piece.size;
  const std::uint64_t record_size = kRecordHeaderSize + size;

  const auto step =
      limits_.step(event, record_size, file_header_size(settings_.bu_id.size()), fd_ >= 0);
  if (step == FileLimits::Step::over_cap) return WriterCounts::add(counts_.events_over_cap);
  if (step == FileLimits::Step::roll_then_write && !finish_file()) return;
  if (fd_ < 0 && !open_file()) return;

  std::uint32_t crc = 0;
  for (const EventPiece& piece : pieces) crc = wire::crc32c({piece.data, piece.size}, crc);
  if (!ensure_iov_room(1)) return;
  auto& header = record_headers_[record_count_++];
  encode_record_header(
      RecordHeader{event.flags, event.number, size, static_cast<std::uint32_t>(pieces.size()), crc},
      header);
  iov_[iov_count_++] = iovec{header.data(), header.size()};
  for (const EventPiece& piece : pieces) {
    if (piece.size == 0) continue;
    if (!ensure_iov_room(1)) return;
    // writev() takes non-const iovecs but only reads the memory.
    iov_[iov_count_++] = iovec{const_cast<std::byte*>(piece.data), piece.size};
  }

  file_crc_ = crc32c_combine(wire::crc32c(header, file_crc_), crc, size);
  if (limits_.file_events() == 0) first_event_ = event.number;
  last_event_ = event.number;
  limits_.added(event, record_size);
}

FileLimits::Step FileLimits::step(const BuiltEvent& event, std::uint64_t bytes,
                                  std::uint64_t header, bool open) {
  if (over_cap_) return Step::over_cap;
  const bool roll =
      open && file_events_ > 0 &&
      (event.lumi != file_lumi_ ||
       (settings_.max_file_events != 0 && file_events_ >= settings_.max_file_events) ||
       (settings_.max_file_bytes != 0 && file_bytes_ + bytes > settings_.max_file_bytes));
  // A new file's header counts too (the one rolled to, or the first).
  const std::uint64_t added = bytes + (roll || !open ? header : 0);
  if (settings_.max_total_bytes != 0 && total_bytes_ + added > settings_.max_total_bytes) {
    over_cap_ = true;
    spdlog::warn(
        "{} of {}: disk cap max_total_mb reached after {} bytes in {}: {} and every later one "
        "are not written (counted in events_over_cap)",
        writer_, settings_.bu_id, total_bytes_, settings_.dir,
        settings_.content == FileContent::timeslices ? fmt::format("timeslice {}", event.number)
                                                     : fed::event_name(event.number));
    return Step::over_cap;
  }
  return roll ? Step::roll_then_write : Step::write;
}

void FileLimits::opened(std::uint64_t header) {
  file_events_ = 0;
  file_bytes_ = header;
  total_bytes_ += header;
}

void FileLimits::added(const BuiltEvent& event, std::uint64_t bytes) {
  if (file_events_ == 0) file_lumi_ = event.lumi;
  ++file_events_;
  file_bytes_ += bytes;
  total_bytes_ += bytes;
}

bool FileOutput::ensure_iov_room(std::size_t entries) {
  if (iov_count_ + entries <= kMaxIov && record_count_ < record_headers_.size()) return true;
  return flush();
}

bool FileOutput::flush() {
  const int error = writev_all(fd_, iov_.data(), iov_count_);
  iov_count_ = record_count_ = 0;
  if (error != 0) {
    WriterCounts::add(counts_.write_errors);
    set_failure("file output: writing " + stem_ + std::string(kDataSuffix) +
                std::string(kPartSuffix) + ": " + std::strerror(error));
    return false;
  }
  return true;
}

}  // namespace daqflow::apps::output
