// `output: {kind: discard}`: the output of benchmarks. It counts what it is given and hands every
// batch straight back, in order, through a bounded ring sized at construction.

#include <atomic>

#include "daqflow/core/rings.hpp"
#include "outputs.hpp"

namespace daqflow::apps::output {

namespace {

class DiscardOutput final : public EventOutput {
 public:
  explicit DiscardOutput(std::size_t depth) : done_(depth) {}

  [[nodiscard]] bool submit(OutputBatch* batch) override {
    std::uint64_t bytes = 0;
    for (const BuiltEvent& e : batch->events) bytes += e.size;
    const std::uint64_t events = batch->events.size();
    OutputBatch* handed = batch;
    if (!done_.try_push(std::move(handed))) return false;
    // One writer (the BU's agent): plain stores, readable from any thread.
    events_.store(events_.load(std::memory_order_relaxed) + events, std::memory_order_relaxed);
    bytes_.store(bytes_.load(std::memory_order_relaxed) + bytes, std::memory_order_relaxed);
    queued_.store(queued_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    return true;
  }

  [[nodiscard]] OutputBatch* poll_done() override {
    OutputBatch* batch = nullptr;
    if (!done_.try_pop(batch)) return nullptr;
    queued_.store(queued_.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
    return batch;
  }

  Result<void> close() override { return ok(); }

  [[nodiscard]] OutputStats stats() const override {
    OutputStats s;
    s.events_written = events_.load(std::memory_order_relaxed);
    s.bytes_written = bytes_.load(std::memory_order_relaxed);
    s.queued = queued_.load(std::memory_order_relaxed);
    return s;
  }

  [[nodiscard]] std::string failure() const override { return {}; }
  [[nodiscard]] bool failed() const override { return false; }

 private:
  core::SpscRing<OutputBatch*> done_;
  std::atomic<std::uint64_t> events_{0};
  std::atomic<std::uint64_t> bytes_{0};
  std::atomic<std::uint32_t> queued_{0};
};

}  // namespace

Result<std::unique_ptr<EventOutput>> make_discard_output(const OutputContext& context) {
  const std::size_t depth = context.queue_depth == 0 ? 1 : context.queue_depth;
  return std::unique_ptr<EventOutput>(std::make_unique<DiscardOutput>(depth));
}

}  // namespace daqflow::apps::output
