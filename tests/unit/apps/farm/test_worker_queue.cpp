// What a filter-farm worker holds and decides, without sockets (apps/farm/worker_queue.hpp), on a
// clock the test keeps: events taken only under its epoch after its token, decisions by the
// model due after their drawn time and sent in order, pushed and stale events dropped, a fence.

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "apps/farm/worker_queue.hpp"
#include "daqflow/apps/farm/dispatcher.hpp"
#include "daqflow/wire/endian.hpp"

namespace daqflow::apps::farm {
namespace {

constexpr std::uint32_t kOutput = 64;

class WorkerQueueTest : public ::testing::Test {
 protected:
  static WorkerQueue::Model model(double accept_fraction, double accept_us, double reject_us) {
    WorkerQueue::Model m;
    m.accept_fraction = accept_fraction;
    m.trigger_bits = 0x5;
    m.output_bytes = kOutput;
    m.accept_time_us.mean = accept_us;
    m.reject_time_us.mean = reject_us;
    return m;
  }
  void SetUp() override {
    auto pool = core::BufferPool::create("test.decisions", wire::kDecisionSize + kOutput, 16);
    ASSERT_TRUE(pool) << pool.error().message();
    pool_ = std::move(*pool);
  }
  static wire::FarmEvent event(std::uint64_t number, std::uint32_t epoch, std::uint32_t slot = 3) {
    wire::FarmEvent e;
    e.event = number;
    e.epoch = epoch;
    e.slot = slot;
    e.size = 100;
    return e;
  }
  static WorkerQueue::Arrival arrive(WorkerQueue& q, const wire::FarmEvent& e) {
    transport::Message m;
    m.tag = e.event;
    return q.arrive(e, m);
  }
  // Decides and sends (pops) whatever is due at now, in order; the event numbers sent.
  std::vector<std::uint64_t> send_due(WorkerQueue& q, std::int64_t now) {
    std::vector<std::uint64_t> sent;
    while (WorkerQueue::Held* h = q.head()) {
      if (h->done_ns == 0) (void)q.decide_by_model(*h, pool_->acquire(), now);
      if (now < h->done_ns) break;
      sent.push_back(h->decision.event);
      q.pop();
    }
    return sent;
  }

  std::unique_ptr<core::BufferPool> pool_;
};

TEST_F(WorkerQueueTest, TakesEventsOnlyAfterItsTokenUnderItsEpoch) {
  WorkerQueue q(4, model(1, 10, 10));
  EXPECT_TRUE(q.token_due());
  EXPECT_EQ(arrive(q, event(1, 0)), WorkerQueue::Arrival::stale) << "before the token";
  q.token_sent();
  EXPECT_FALSE(q.token_due());
  EXPECT_EQ(arrive(q, event(2, 1)), WorkerQueue::Arrival::stale) << "another epoch";
  EXPECT_EQ(arrive(q, event(3, 0, kNoSlot)), WorkerQueue::Arrival::pushed);
  EXPECT_EQ(arrive(q, event(4, 0)), WorkerQueue::Arrival::held);
  EXPECT_EQ(q.held(), 1U);
  EXPECT_EQ(q.head()->message.tag, 4U) << "the message is kept with the event";
}

TEST_F(WorkerQueueTest, RefusesMoreEventsThanItHolds) {
  WorkerQueue q(2, model(1, 10, 10));
  q.token_sent();
  EXPECT_EQ(arrive(q, event(0, 0)), WorkerQueue::Arrival::held);
  EXPECT_EQ(arrive(q, event(1, 0)), WorkerQueue::Arrival::held);
  EXPECT_EQ(arrive(q, event(2, 0)), WorkerQueue::Arrival::full);
}

TEST_F(WorkerQueueTest, AModelDecisionIsDueAfterItsDrawnTimeAndCarriesTheEvent) {
  WorkerQueue q(4, model(1, 25, 7));  // every event accepted, 25 us each
  q.token_sent();
  ASSERT_EQ(arrive(q, event(42, 0)), WorkerQueue::Arrival::held);
  WorkerQueue::Held& h = *q.head();
  EXPECT_EQ(q.decide_by_model(h, pool_->acquire(), 1000), 25'000);
  EXPECT_EQ(h.done_ns, 26'000);
  EXPECT_EQ(h.decision.verdict, wire::Verdict::accept);
  EXPECT_EQ(h.decision.trigger_bits, 0x5U);
  EXPECT_EQ(h.decision.output_size, kOutput);
  EXPECT_EQ(h.decision.slot, 3U);
  // The encoded decision and the output's first 8 bytes: the event number.
  wire::Decision d;
  ASSERT_EQ(wire::decode(std::span<const std::byte>(h.output.data(), wire::kDecisionSize),
                         wire::kDecisionSize + kOutput, d),
            wire::PayloadStatus::ok);
  EXPECT_EQ(d.event, 42U);
  EXPECT_EQ(wire::load_le64(h.output.data() + wire::kDecisionSize), 42U);
  EXPECT_TRUE(send_due(q, 25'999).empty());
  EXPECT_EQ(send_due(q, 26'000), (std::vector<std::uint64_t>{42}));
}

TEST_F(WorkerQueueTest, RejectedEventsTakeTheirOwnTimeAndCarryNoOutput) {
  WorkerQueue q(4, model(0, 25, 7));  // every event rejected, 7 us each
  q.token_sent();
  ASSERT_EQ(arrive(q, event(1, 0)), WorkerQueue::Arrival::held);
  WorkerQueue::Held& h = *q.head();
  EXPECT_EQ(q.decide_by_model(h, pool_->acquire(), 0), 7'000);
  EXPECT_EQ(h.decision.verdict, wire::Verdict::reject);
  EXPECT_EQ(h.decision.output_size, 0U);
  EXPECT_EQ(h.decision.trigger_bits, 0U);
}

TEST_F(WorkerQueueTest, DecisionsLeaveInTheOrderTheEventsCame) {
  WorkerQueue q(4, model(1, 10, 10));
  q.token_sent();
  for (std::uint64_t e = 0; e < 3; ++e)
    ASSERT_EQ(arrive(q, event(e, 0)), WorkerQueue::Arrival::held);
  // One event is processed at a time: each starts when the one before has left.
  EXPECT_EQ(send_due(q, 0), std::vector<std::uint64_t>{});
  EXPECT_EQ(send_due(q, 10'000), (std::vector<std::uint64_t>{0}));
  EXPECT_EQ(q.head()->done_ns, 20'000);
  EXPECT_EQ(send_due(q, 30'000), (std::vector<std::uint64_t>{1}))
      << "event 2 starts when event 1 leaves, at 30 us: 10 us from then";
  EXPECT_EQ(send_due(q, 39'999), std::vector<std::uint64_t>{});
  EXPECT_EQ(send_due(q, 40'000), (std::vector<std::uint64_t>{2}));
}

TEST_F(WorkerQueueTest, AFenceDropsWhatItHoldsAndAsksForANewToken) {
  WorkerQueue q(4, model(1, 10, 10));
  q.token_sent();
  ASSERT_EQ(arrive(q, event(1, 0)), WorkerQueue::Arrival::held);
  ASSERT_EQ(arrive(q, event(2, 0)), WorkerQueue::Arrival::held);
  EXPECT_FALSE(q.fenced_by(0));
  EXPECT_EQ(q.fence(0), 0U) << "not a newer epoch";
  EXPECT_EQ(q.held(), 2U);
  EXPECT_TRUE(q.fenced_by(2));
  EXPECT_EQ(q.fence(2), 2U);
  EXPECT_EQ(q.held(), 0U);
  EXPECT_EQ(q.epoch(), 2U);
  EXPECT_TRUE(q.token_due());
  EXPECT_EQ(arrive(q, event(3, 2)), WorkerQueue::Arrival::stale) << "the new token first";
  q.token_sent();
  EXPECT_EQ(arrive(q, event(4, 0)), WorkerQueue::Arrival::stale) << "sent before the fence";
  EXPECT_EQ(arrive(q, event(5, 2)), WorkerQueue::Arrival::held);
}

}  // namespace
}  // namespace daqflow::apps::farm
