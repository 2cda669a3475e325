// The BU's block building, fed with real block messages cut by two RUs' readout stores.
#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "daqflow/apps/evb/block_builder.hpp"
#include "daqflow/apps/evb/readout_store.hpp"
#include "daqflow/apps/fed/emulator.hpp"

namespace daqflow::apps::evb {
namespace {

constexpr transport::AppIndex kEvm = 10;
constexpr transport::AppIndex kRu = 11;
constexpr std::int64_t kTimeout = 1'000'000;

// One RU: an emulator and a store, producing the same events as every other RU.
struct Ru {
  Ru(transport::AppIndex index, std::uint16_t first_fed, std::uint32_t feds) {
    fed::EmulatorSettings e;
    e.feds = feds;
    e.first_fed_id = first_fed;
    e.size.dist = fed::SizeDistribution::uniform;
    e.size.mean = 800;
    e.size.sd = 200;
    e.seed = index;
    source = fed::FedEmulator::create(e).value();
    ReadoutSettings s;
    s.ru = index;
    s.chunk_size = 1 << 16;
    s.chunks = 8;
    s.event_capacity = 256;
    s.block_capacity = 16;
    s.max_block_events = 8;
    store = ReadoutStore::create(s, source->max_super_fragment_size()).value();
  }
  // The block message for events [first, first + n) as block id.
  transport::Message block(std::uint64_t id, std::uint64_t first, std::uint32_t n,
                           std::uint32_t generation = 0) {
    while (store->produced() < first + n) {
      EXPECT_EQ(store->produce(*source, std::numeric_limits<std::uint64_t>::max()),
                ProduceStatus::produced);
    }
    wire::Assign a{id, first, n, 1, generation};
    EXPECT_NE(store->assign(a), AssignOutcome::error) << store->error();
    EXPECT_TRUE(store->cut());
    transport::Message m;
    for (std::size_t i = 0; i < store->ready_count(); ++i) {
      if (store->ready_at(i).block_id == id) {
        store->stage(i, m);
        store->mark_sent(i);
        break;
      }
    }
    return m;
  }
  std::unique_ptr<fed::FedEmulator> source;
  std::unique_ptr<ReadoutStore> store;
};

std::unique_ptr<BlockBuilder> builder(std::uint32_t slots = 2, bool crc = false) {
  BuilderSettings s;
  s.rus = {kEvm, kRu};
  s.feds = {2, 3};
  s.slots = slots;
  s.max_block_events = 8;
  s.timeout_ns = kTimeout;
  s.check_crc = crc;
  auto b = BlockBuilder::create(s);
  EXPECT_TRUE(b) << b.error().message();
  return std::move(*b);
}

output::OutputBatch batch_for(const BlockBuilder& b) {
  output::OutputBatch batch;
  batch.events.reserve(8);
  batch.pieces.reserve(b.max_pieces());
  batch.buffers.reserve(b.max_buffers());
  return batch;
}

class BlockBuilderTest : public ::testing::Test {
 protected:
  Ru evm{kEvm, 0, 2};
  Ru ru{kRu, 100, 3};
};

TEST_F(BlockBuilderTest, BuildsEventsAsReferencesToTheReceivedParts) {
  auto b = builder();
  transport::Message m1 = evm.block(0, 0, 8);
  transport::Message m2 = ru.block(0, 0, 8);
  const std::byte* evm_data = m1.segments[1].bytes().data();
  EXPECT_EQ(b->on_part(kEvm, m1, 0), PartOutcome::first);
  EXPECT_EQ(m1.segment_count, 0) << "the builder took the buffers";
  EXPECT_EQ(b->ready(0), -1) << "waiting for the RU";
  EXPECT_EQ(b->on_part(kRu, m2, 0), PartOutcome::added);
  const int slot = b->ready(0);
  ASSERT_GE(slot, 0);
  output::OutputBatch batch = batch_for(*b);
  const BuildResult r = b->build(slot, batch);
  EXPECT_EQ(r.built, 8u);
  EXPECT_EQ(r.incomplete, 0u);
  EXPECT_EQ(r.corrupted, 0u) << r.problem;
  EXPECT_EQ(r.missing_ru, -1);
  ASSERT_EQ(batch.events.size(), 8u);
  std::uint64_t bytes = 0;
  for (std::uint32_t i = 0; i < 8; ++i) {
    const output::BuiltEvent& e = batch.events[i];
    EXPECT_EQ(e.number, i);
    EXPECT_EQ(e.flags, 0u);
    ASSERT_EQ(e.piece_count, 2u);
    EXPECT_EQ(batch.pieces[e.first_piece].size, evm.source->super_fragment_size(i));
    EXPECT_EQ(batch.pieces[e.first_piece + 1].size, ru.source->super_fragment_size(i));
    EXPECT_EQ(e.size, evm.source->super_fragment_size(i) + ru.source->super_fragment_size(i));
    bytes += e.size;
  }
  EXPECT_EQ(batch.pieces[0].data, evm_data) << "no copy: the piece is the RU's chunk";
  EXPECT_EQ(r.bytes, bytes);
  EXPECT_EQ(b->open(), 0u);
  EXPECT_FALSE(batch.buffers.empty()) << "the batch keeps the parts' buffers alive";
}

TEST_F(BlockBuilderTest, AMissingPartMakesTheEventsIncompleteAfterTheTimeout) {
  auto b = builder();
  transport::Message m1 = evm.block(0, 0, 4);
  ASSERT_EQ(b->on_part(kEvm, m1, 100), PartOutcome::first);
  EXPECT_EQ(b->ready(100 + kTimeout - 1), -1);
  const int slot = b->ready(100 + kTimeout);
  ASSERT_GE(slot, 0);
  output::OutputBatch batch = batch_for(*b);
  const BuildResult r = b->build(slot, batch);
  EXPECT_EQ(r.built, 0u);
  EXPECT_EQ(r.incomplete, 4u);
  EXPECT_EQ(r.missing_ru, 1);
  EXPECT_EQ(r.missing_count, 1u);
  for (const auto& e : batch.events) {
    EXPECT_EQ(e.flags, wire::kEventIncomplete);
    EXPECT_EQ(e.piece_count, 1u);
  }
  transport::Message late = ru.block(0, 0, 4);
  EXPECT_EQ(b->on_part(kRu, late, 200 + kTimeout), PartOutcome::late);
  EXPECT_EQ(b->open(), 0u);
}

TEST_F(BlockBuilderTest, ALostRuIsNotWaitedFor) {
  auto b = builder();
  b->ru_lost(1);
  transport::Message m1 = evm.block(0, 0, 4);
  ASSERT_EQ(b->on_part(kEvm, m1, 0), PartOutcome::first);
  const int slot = b->ready(0);
  ASSERT_GE(slot, 0);
  output::OutputBatch batch = batch_for(*b);
  EXPECT_EQ(b->build(slot, batch).incomplete, 4u);
}

TEST_F(BlockBuilderTest, AFragmentOfAnotherEventIsFlaggedCorrupted) {
  auto b = builder();
  transport::Message m1 = evm.block(0, 0, 4);
  transport::Message m2 = ru.block(0, 0, 4);
  // The RU's event 2: rewrite the L1 id of its first fragment (bits 32..55 of the header).
  std::uint32_t offset = 0;
  for (std::uint64_t e = 0; e < 2; ++e) offset += ru.source->super_fragment_size(e);
  std::byte* header = m2.segments[1].bytes().data() + offset;
  header[4] = static_cast<std::byte>(static_cast<unsigned>(header[4]) ^ 0x7u);
  ASSERT_EQ(b->on_part(kEvm, m1, 0), PartOutcome::first);
  ASSERT_EQ(b->on_part(kRu, m2, 0), PartOutcome::added);
  output::OutputBatch batch = batch_for(*b);
  const BuildResult r = b->build(b->ready(0), batch);
  EXPECT_EQ(r.corrupted, 1u);
  EXPECT_EQ(r.built, 4u) << "built and flagged, not dropped";
  EXPECT_EQ(batch.events[2].flags, wire::kEventCorrupted);
  EXPECT_EQ(batch.events[1].flags, 0u);
  EXPECT_NE(r.problem.find("event 2"), std::string::npos) << r.problem;
}

TEST_F(BlockBuilderTest, PayloadDamageShowsOnlyWithCrcChecks) {
  for (const bool crc : {false, true}) {
    Ru a{kEvm, 0, 2};
    Ru c{kRu, 100, 3};
    auto b = builder(2, crc);
    transport::Message m1 = a.block(0, 0, 2);
    transport::Message m2 = c.block(0, 0, 2);
    m2.segments[1].bytes()[20] ^= std::byte{0x01};  // inside the first fragment's payload
    ASSERT_EQ(b->on_part(kEvm, m1, 0), PartOutcome::first);
    ASSERT_EQ(b->on_part(kRu, m2, 0), PartOutcome::added);
    output::OutputBatch batch = batch_for(*b);
    const BuildResult r = b->build(b->ready(0), batch);
    EXPECT_EQ(r.corrupted, crc ? 1u : 0u) << "check_crc " << crc;
  }
}

TEST_F(BlockBuilderTest, DropsDuplicatesUnknownSendersAndExtraBlocks) {
  auto b = builder(1);
  transport::Message m1 = evm.block(0, 0, 4);
  transport::Message again = evm.block(0, 0, 4, 1);  // a resend (generation 1)
  ASSERT_EQ(b->on_part(kEvm, m1, 0), PartOutcome::first);
  EXPECT_EQ(b->on_part(kEvm, again, 0), PartOutcome::duplicate);
  EXPECT_GT(again.segment_count, 0) << "a dropped part keeps its buffers for the caller";
  transport::Message stranger = ru.block(0, 0, 4);
  EXPECT_EQ(b->on_part(42, stranger, 0), PartOutcome::unknown);
  transport::Message next = evm.block(1, 4, 4);
  EXPECT_EQ(b->on_part(kEvm, next, 0), PartOutcome::no_slot) << "one slot only";
}

TEST_F(BlockBuilderTest, RejectsAPartWhoseHeaderNamesAnotherRu) {
  auto b = builder();
  transport::Message m = ru.block(0, 0, 4);
  wire::PayloadStatus detail = wire::PayloadStatus::bad_count;
  EXPECT_EQ(b->on_part(kEvm, m, 0, &detail), PartOutcome::malformed);
  EXPECT_EQ(detail, wire::PayloadStatus::ok) << "decodes, but names the RU, not the EVM";
  transport::Message empty;
  EXPECT_EQ(b->on_part(kEvm, empty, 0), PartOutcome::malformed);
}

TEST_F(BlockBuilderTest, TakesTheHighestGenerationOfItsParts) {
  auto b = builder();
  transport::Message m1 = evm.block(3, 0, 2, 0);
  transport::Message m2 = ru.block(3, 0, 2, 0);
  // Re-assigned as generation 2 before the RU sent: its part carries 2.
  ru.store->park(1);
  ASSERT_EQ(ru.store->assign(wire::Assign{3, 0, 2, 1, 2}), AssignOutcome::resend);
  transport::Message m3;
  ru.store->stage(0, m3);
  ASSERT_EQ(b->on_part(kEvm, m1, 0), PartOutcome::first);
  ASSERT_EQ(b->on_part(kRu, m3, 0), PartOutcome::added);
  output::OutputBatch batch = batch_for(*b);
  const BuildResult r = b->build(b->ready(0), batch);
  EXPECT_EQ(r.block_id, 3u);
  EXPECT_EQ(r.generation, 2u);
}

}  // namespace
}  // namespace daqflow::apps::evb
