// `output: {kind: farm, sfc: ID}`: a BU hands its built events to the SFC of the filter farm
// (docs/farm.md). Each event goes as one farm_event message whose segments are the descriptor
// and the event's pieces, straight from the buffers the RUs' parts arrived in (no copy where the
// transport gathers). At most `window` events (the SFC's input_window) are sent and not yet
// taken over; the SFC's farm_credit says how many it has taken, in the order they were sent,
// and a batch is done (the BU acknowledges its block to the EVM) once all its events are taken.
//
// Exactly once: the BU commits a block with the EVM before it hands it here, as for every
// output; a block re-assigned after this BU was lost may reach the SFC a second time from the
// BU that builds it again, and the SFC drops the event numbers it has seen (docs/farm.md).
//
// Threading: the BU's agent thread (submit, poll_done, progress, on_message); stats() and
// failure() from any thread.

#include <atomic>
#include <cstring>
#include <vector>

#include "daqflow/apps/builders/first_failure.hpp"
#include "daqflow/wire/farm.hpp"
#include "outputs.hpp"

namespace daqflow::apps::output {

namespace {

constexpr std::size_t kDescriptorBuffer = 64;

class FarmOutput final : public EventOutput {
 public:
  FarmOutput(const OutputContext& c, std::unique_ptr<core::BufferPool> pool,
             std::unique_ptr<core::BufferPool> copies)
      : endpoint_(c.endpoint),
        sfc_(c.sfc),
        window_(c.sfc_window),
        pool_(std::move(pool)),
        copies_(std::move(copies)),
        queue_(std::max<std::size_t>(c.queue_depth, 1)) {}

  ~FarmOutput() override {
    core::retire_pool(pool_, core::BusyPool::leak, "farm output");
    core::retire_pool(copies_, core::BusyPool::leak, "farm output copies");
  }

  [[nodiscard]] bool submit(OutputBatch* batch) override {
    if (count_ == queue_.size()) return false;
    Entry& e = queue_[(head_ + count_++) % queue_.size()];
    e.batch = batch;
    queued_events_ += batch->events.size();
    e.done_at = queued_events_;
    queued_.store(count_, std::memory_order_relaxed);
    return true;
  }

  [[nodiscard]] OutputBatch* poll_done() override {
    if (count_ == 0 || queue_[head_].done_at > taken_) return nullptr;
    OutputBatch* b = queue_[head_].batch;
    for (const BuiltEvent& e : b->events) bytes_ += e.size;
    bytes_written_.store(bytes_, std::memory_order_relaxed);
    head_ = (head_ + 1) % queue_.size();
    --count_;
    if (sending_ > 0)
      --sending_;
    else
      next_event_ = 0;
    queued_.store(count_, std::memory_order_relaxed);
    return b;
  }

  Result<void> close() override { return ok(); }

  [[nodiscard]] OutputStats stats() const override {
    OutputStats s;
    s.events_written = taken_published_.load(std::memory_order_relaxed);
    s.bytes_written = bytes_written_.load(std::memory_order_relaxed);
    s.queued = queued_.load(std::memory_order_relaxed);
    s.events_copied = copied_published_.load(std::memory_order_relaxed);
    return s;
  }
  [[nodiscard]] std::string failure() const override { return failure_.reason(); }
  [[nodiscard]] bool failed() const override { return failure_.failed(); }

  // Sends what the window allows, event by event, oldest batch first.
  int progress() override {
    int sent = 0;
    while (sending_ < count_ && sent_ - taken_ < window_ && !failed()) {
      OutputBatch& b = *queue_[(head_ + sending_) % queue_.size()].batch;
      if (next_event_ == b.events.size()) {
        ++sending_;
        next_event_ = 0;
        continue;
      }
      const BuiltEvent& e = b.events[next_event_];
      core::Buffer desc = pool_->acquire();
      if (!desc) break;
      wire::FarmEvent f;
      f.event = e.number;
      f.slot = 0xffffffff;
      f.size = static_cast<std::uint32_t>(e.size);
      f.flags = e.flags;
      wire::encode(f,
                   std::span<std::byte, wire::kFarmEventSize>(desc.data(), wire::kFarmEventSize));
      transport::Message m;
      m.type = wire::MessageType::farm_event;
      m.tag = e.number;
      m.add(std::move(desc), 0, wire::kFarmEventSize);
      if (e.piece_count + 1 > transport::kMaxSegments && copies_ != nullptr) {
        // More pieces than a message carries: the event in one buffer (a copy).
        core::Buffer whole = copies_->acquire();
        if (!whole) {
          m.clear();
          break;  // every copy in flight: when the SFC has taken one
        }
        if (!copy_whole(b, e, std::move(whole), m)) return sent;
      } else if (!add_pieces(b, e, m)) {
        return sent;
      }
      const transport::SendStatus s = endpoint_->post_send(sfc_, m);
      if (s == transport::SendStatus::back_pressure || s == transport::SendStatus::not_connected) {
        m.clear();
        break;
      }
      if (s != transport::SendStatus::ok) {
        m.clear();
        set_failure("farm output: sending to the SFC failed: " +
                    std::string(transport::to_string(s)));
        return sent;
      }
      ++sent_;
      ++next_event_;
      ++sent;
    }
    return sent;
  }

  [[nodiscard]] bool on_message(const transport::Completion& c) override {
    if (c.peer != sfc_) return false;
    if (c.kind == transport::Completion::Kind::recv &&
        c.message.type == wire::MessageType::farm_credit && c.message.segment_count > 0) {
      wire::FarmCredit credit;
      if (wire::decode(c.message.segments[0].bytes(), credit) == wire::PayloadStatus::ok &&
          credit.taken > taken_ && credit.taken <= sent_) {
        taken_ = credit.taken;
        taken_published_.store(taken_, std::memory_order_relaxed);
      }
      return true;
    }
    if (c.kind == transport::Completion::Kind::error ||
        (c.kind == transport::Completion::Kind::peer_closed && count_ > 0)) {
      set_failure("farm output: the SFC is lost" +
                  (c.kind == transport::Completion::Kind::error
                       ? ": " + std::string(c.reason)
                       : std::string(" (it closed its connection with events not taken)")));
      return true;
    }
    return c.kind == transport::Completion::Kind::send_done;
  }

 private:
  // The event's pieces as the message's segments, shared from the batch's buffers (no copy).
  bool add_pieces(const OutputBatch& b, const BuiltEvent& e, transport::Message& m) {
    for (std::uint32_t i = 0; i < e.piece_count; ++i) {
      const EventPiece& p = b.pieces[e.first_piece + i];
      const core::Buffer* holder = nullptr;
      for (const core::Buffer& buf : b.buffers) {
        if (p.data >= buf.data() && p.data + p.size <= buf.data() + buf.capacity()) {
          holder = &buf;
          break;
        }
      }
      if (holder == nullptr ||
          !m.add(holder->share(), static_cast<std::uint32_t>(p.data - holder->data()), p.size)) {
        m.clear();
        set_failure(holder == nullptr
                        ? "farm output: a piece of event " + std::to_string(e.number) +
                              " is in no buffer of its batch"
                        : "farm output: event " + std::to_string(e.number) + " has " +
                              std::to_string(e.piece_count) +
                              " pieces, more than a message carries (15 RUs at most)");
        return false;
      }
    }
    return true;
  }

  // The event's pieces copied, in order, into one buffer: its one segment.
  bool copy_whole(const OutputBatch& b, const BuiltEvent& e, core::Buffer whole,
                  transport::Message& m) {
    if (e.size > whole.capacity()) {
      m.clear();
      set_failure("farm output: event " + std::to_string(e.number) + " of " +
                  std::to_string(e.size) + " bytes exceeds the largest expected (" +
                  std::to_string(whole.capacity()) + ")");
      return false;
    }
    std::uint64_t at = 0;
    for (std::uint32_t i = 0; i < e.piece_count; ++i) {
      const EventPiece& p = b.pieces[e.first_piece + i];
      std::memcpy(whole.data() + at, p.data, p.size);
      at += p.size;
    }
    (void)m.add(std::move(whole), 0, static_cast<std::uint32_t>(at));
    ++copied_;
    copied_published_.store(copied_, std::memory_order_relaxed);
    return true;
  }

  struct Entry {
    OutputBatch* batch = nullptr;
    std::uint64_t done_at = 0;  // taken_ at which every event of the batch is taken
  };
  void set_failure(std::string why) { (void)failure_.set(std::move(why)); }

  transport::Endpoint* endpoint_;
  transport::AppIndex sfc_;
  std::uint64_t window_;
  std::unique_ptr<core::BufferPool> pool_;
  std::unique_ptr<core::BufferPool> copies_;  // null: events are never copied
  std::uint64_t copied_ = 0;
  std::atomic<std::uint64_t> copied_published_{0};
  std::vector<Entry> queue_;  // ring
  std::size_t head_ = 0;
  std::size_t count_ = 0;
  std::size_t sending_ = 0;     // batches before it are sent whole
  std::size_t next_event_ = 0;  // in the batch being sent
  std::uint64_t queued_events_ = 0;
  std::uint64_t sent_ = 0;
  std::uint64_t taken_ = 0;
  std::uint64_t bytes_ = 0;
  std::atomic<std::uint64_t> taken_published_{0};
  std::atomic<std::uint64_t> bytes_written_{0};
  std::atomic<std::uint32_t> queued_{0};
  FirstFailure failure_;
};

}  // namespace

Result<std::unique_ptr<EventOutput>> make_farm_output(const OutputContext& context) {
  if (context.endpoint == nullptr) return Error("output: kind farm needs the BU's endpoint");
  if (context.sfc_window == 0) return Error("output: the SFC's input_window is 0");
  if (auto r = context.endpoint->connect(context.sfc); !r) {
    return r.error().context("output: connecting to the SFC");
  }
  auto pool = context.endpoint->make_send_pool(context.bu_id + ".farm", kDescriptorBuffer,
                                               context.sfc_window + 16);
  if (!pool) return pool.error();
  std::unique_ptr<core::BufferPool> copies;
  if (context.max_event_size > 0) {
    // Copies in flight at once: a few are enough to keep the SFC busy (an event waits for one
    // to come back), and each may be large (a timeslice).
    auto made =
        context.endpoint->make_send_pool(context.bu_id + ".farm_copies", context.max_event_size,
                                         std::min<std::uint32_t>(context.sfc_window, 8));
    if (!made) return made.error();
    copies = std::move(*made);
  }
  return std::unique_ptr<EventOutput>(
      std::make_unique<FarmOutput>(context, std::move(*pool), std::move(copies)));
}

}  // namespace daqflow::apps::output
