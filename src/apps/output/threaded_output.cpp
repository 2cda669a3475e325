#include "threaded_output.hpp"

#include <fmt/format.h>

#include <filesystem>

#include "daqflow/apps/fed/event_numbers.hpp"
#include "daqflow/core/log.hpp"

namespace daqflow::apps::output {

ThreadedOutput::ThreadedOutput(std::size_t queue_depth)
    : queue_depth_(queue_depth), pending_(queue_depth), done_(queue_depth) {}

void ThreadedOutput::start(std::uint64_t events_before, std::uint64_t bytes_before) {
  counts_.events_written.store(events_before, std::memory_order_relaxed);
  counts_.bytes_written.store(bytes_before, std::memory_order_relaxed);
  thread_ = std::thread([this] { run(); });
}

bool ThreadedOutput::submit(OutputBatch* batch) {
  if (closed_.load(std::memory_order_relaxed) ||
      queued_.load(std::memory_order_relaxed) >= queue_depth_) {
    return false;
  }
  if (!pending_.try_push(std::move(batch))) return false;
  queued_.fetch_add(1, std::memory_order_relaxed);
  wake_.fetch_add(1, std::memory_order_release);
  wake_.notify_one();
  return true;
}

OutputBatch* ThreadedOutput::poll_done() {
  OutputBatch* batch = nullptr;
  if (!done_.try_pop(batch)) return nullptr;
  queued_.fetch_sub(1, std::memory_order_relaxed);
  return batch;
}

Result<void> ThreadedOutput::close() {
  if (!closed_.exchange(true)) {
    stopping_.store(true, std::memory_order_release);
    wake_.fetch_add(1, std::memory_order_release);
    wake_.notify_one();
    if (thread_.joinable()) thread_.join();
  }
  if (failure_.failed()) return Error(failure_.reason());
  return ok();
}

std::string ThreadedOutput::failure() const {
  return failure_.reason();
}

void ThreadedOutput::set_failure(std::string reason) {
  if (failed_) return;
  failed_ = true;
  spdlog::error("{}", reason);
  (void)failure_.set(std::move(reason));
}

void ThreadedOutput::run() {
  for (;;) {
    const std::uint32_t seen = wake_.load(std::memory_order_acquire);
    OutputBatch* batch = nullptr;
    if (pending_.try_pop(batch)) {
      write_batch(*batch);
      // Cannot fail: at most queue_depth batches are lent out and done_ holds that many.
      (void)done_.try_push(std::move(batch));
      continue;
    }
    if (stopping_.load(std::memory_order_acquire)) {
      // Every submit() happened before close(): once stopping_ is seen, so are their batches.
      while (pending_.try_pop(batch)) {
        write_batch(*batch);
        (void)done_.try_push(std::move(batch));
      }
      break;
    }
    wake_.wait(seen, std::memory_order_acquire);
  }
  finish();
}

void ThreadedOutput::write_batch(const OutputBatch& batch) {
  if (failed_) return;
  for (const BuiltEvent& event : batch.events) {
    if (event.first_piece + std::uint64_t{event.piece_count} > batch.pieces.size()) {
      set_failure(fed::event_name(event.number) + " names pieces beyond its batch (a BU bug)");
      return;
    }
    write_event({batch.pieces.data() + event.first_piece, event.piece_count}, event);
    if (failed_) return;
  }
  end_batch();
}

OutputStats ThreadedOutput::stats() const {
  const auto get = [](const std::atomic<std::uint64_t>& c) {
    return c.load(std::memory_order_relaxed);
  };
  OutputStats s;
  s.events_written = get(counts_.events_written);
  s.bytes_written = get(counts_.bytes_written);
  s.files_closed = get(counts_.files_closed);
  s.events_over_cap = get(counts_.events_over_cap);
  s.events_dropped = get(counts_.events_dropped);
  s.write_errors = get(counts_.write_errors);
  s.queued = queued();
  return s;
}

void ThreadedOutput::finished_file(const std::string& path, std::uint64_t events,
                                   std::uint32_t crc32c) {
  std::error_code ec;
  WrittenFile f;
  f.path = std::filesystem::absolute(path, ec).lexically_normal().string();
  if (ec) f.path = path;
  f.bytes = std::filesystem::file_size(path, ec);
  if (ec) {
    // Written and renamed, yet not there to measure: the run's record says 0 bytes, and why.
    spdlog::warn("the size of {} cannot be read for the run's record: {}", path, ec.message());
    f.bytes = 0;
  }
  f.events = events;
  f.checksum = fmt::format("crc32c:{:08x}", crc32c);
  const std::lock_guard lock(files_mutex_);
  files_.push_back(std::move(f));
}

std::vector<WrittenFile> ThreadedOutput::files() const {
  const std::lock_guard lock(files_mutex_);
  return files_;
}

}  // namespace daqflow::apps::output
