#pragma once
// An output that writes on a thread of its own (the event file and FRD writers): the BU's agent
// hands batches over through one bounded SPSC ring and takes them back, written, through
// another, so that it never waits for the disk. A subclass writes each batch
// (write_batch()) and finishes its files when the output closes (finish()), both on the
// writer thread.
//
// Threading: submit() and poll_done() from the BU's agent thread; close() from one control
// thread (after which nothing is submitted); failure() and failed() from any thread.

#include <atomic>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <thread>

#include "daqflow/apps/builders/first_failure.hpp"
#include "daqflow/apps/output/output.hpp"
#include "daqflow/core/rings.hpp"

namespace daqflow::apps::output {

// What a writer has done, counted by its thread, read by any (stats()).
struct WriterCounts {
  std::atomic<std::uint64_t> events_written{0};  // in files it finished
  std::atomic<std::uint64_t> bytes_written{0};
  std::atomic<std::uint64_t> files_closed{0};
  std::atomic<std::uint64_t> events_over_cap{0};  // not written: the disk cap
  std::atomic<std::uint64_t> events_dropped{0};   // not written: incomplete (frd)
  std::atomic<std::uint64_t> write_errors{0};

  // Writer thread (one writer: relaxed is enough for readers that only sample).
  static void add(std::atomic<std::uint64_t>& count, std::uint64_t n = 1) {
    count.fetch_add(n, std::memory_order_relaxed);
  }
};

class ThreadedOutput : public EventOutput {
 public:
  ~ThreadedOutput() override = default;
  ThreadedOutput(const ThreadedOutput&) = delete;
  ThreadedOutput& operator=(const ThreadedOutput&) = delete;

  [[nodiscard]] bool submit(OutputBatch* batch) final;
  [[nodiscard]] OutputBatch* poll_done() final;
  Result<void> close() final;
  [[nodiscard]] std::string failure() const final;
  [[nodiscard]] bool failed() const final { return failure_.failed(); }
  [[nodiscard]] OutputStats stats() const final;
  [[nodiscard]] std::vector<WrittenFile> files() const final;

 protected:
  explicit ThreadedOutput(std::size_t queue_depth);
  // Starts the writer thread: the last step of a subclass's constructor. A writer started again
  // in its run counts what its earlier processes' finished files hold as written.
  void start(std::uint64_t events_before = 0, std::uint64_t bytes_before = 0);
  // A subclass's destructor calls close() first, so that the thread is gone before its members.
  [[nodiscard]] std::uint32_t queued() const { return queued_.load(std::memory_order_relaxed); }
  // Writer thread: each event of a batch in order (its pieces checked to lie in the batch),
  // until one fails the output, then the end of the batch (whatever is gathered goes to disk).
  virtual void write_event(std::span<const EventPiece> pieces, const BuiltEvent& event) = 0;
  virtual void end_batch() = 0;
  virtual void finish() = 0;  // after the last batch
  void set_failure(std::string reason);
  // Writer thread: a file is finished (under its final name), its checksum that of all its
  // bytes; bytes are counted on disk.
  void finished_file(const std::string& path, std::uint64_t events, std::uint32_t crc32c);
  bool failed_ = false;  // writer thread's view
  WriterCounts counts_;

 private:
  void run();
  void write_batch(const OutputBatch& batch);

  std::size_t queue_depth_;
  core::SpscRing<OutputBatch*> pending_;
  core::SpscRing<OutputBatch*> done_;
  std::thread thread_;
  std::atomic<std::uint32_t> wake_{0};
  std::atomic<bool> stopping_{false};
  std::atomic<bool> closed_{false};
  std::atomic<std::uint32_t> queued_{0};
  FirstFailure failure_;  // set by the writer thread
  mutable std::mutex files_mutex_;
  std::vector<WrittenFile> files_;
};

}  // namespace daqflow::apps::output
