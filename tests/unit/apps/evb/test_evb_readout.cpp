// The RU's readout store: super-fragments in chunks, blocks cut from them, retention until the
// EVM releases them.
#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "daqflow/apps/evb/readout_store.hpp"
#include "daqflow/apps/fed/emulator.hpp"
#include "daqflow/wire/fed.hpp"

namespace daqflow::apps::evb {
namespace {

constexpr std::uint64_t kNoLimit = std::numeric_limits<std::uint64_t>::max();

std::unique_ptr<fed::FedEmulator> emulator(std::uint32_t fragment_bytes, std::uint32_t feds = 2) {
  fed::EmulatorSettings s;
  s.feds = feds;
  s.first_fed_id = 10;
  s.size.dist = fed::SizeDistribution::fixed;
  s.size.mean = fragment_bytes;
  s.size.min = 16;
  s.size.max = 1u << 20;
  auto e = fed::FedEmulator::create(s);
  EXPECT_TRUE(e) << e.error().message();
  return std::move(*e);
}

ReadoutSettings small_store(std::size_t chunk_size, std::size_t chunks,
                            std::uint32_t block_events) {
  ReadoutSettings s;
  s.name = "ru-test";
  s.ru = 7;
  s.chunk_size = chunk_size;
  s.chunks = chunks;
  s.event_capacity = 1024;
  s.block_capacity = 16;
  s.max_block_events = block_events;
  s.max_message_size = 4u << 20;
  return s;
}

wire::Assign assign(std::uint64_t id, std::uint64_t first, std::uint32_t count,
                    std::uint32_t bu = 3, std::uint32_t generation = 0) {
  wire::Assign a;
  a.block_id = id;
  a.first_event = first;
  a.event_count = count;
  a.bu = bu;
  a.generation = generation;
  return a;
}

void produce(ReadoutStore& store, fed::FedEmulator& source, std::uint64_t events) {
  for (std::uint64_t i = 0; i < events; ++i) {
    ASSERT_EQ(store.produce(source, kNoLimit), ProduceStatus::produced) << "event " << i;
  }
}

// Decodes a staged block message: header, entries, and every super-fragment checked in place.
wire::BlockHeader check_block(const transport::Message& m, std::uint64_t first, std::uint32_t count,
                              std::uint32_t sf_size) {
  EXPECT_EQ(m.type, wire::MessageType::block);
  EXPECT_GE(m.segment_count, 2);
  std::vector<wire::BlockEntry> entries(count);
  wire::BlockHeader h;
  EXPECT_EQ(wire::decode_block(m.segments[0].bytes(), m.size(), h, entries),
            wire::PayloadStatus::ok);
  EXPECT_EQ(m.segments[0].length, wire::block_descriptor_size(count));
  EXPECT_EQ(h.first_event, first);
  EXPECT_EQ(h.event_count, count);
  EXPECT_EQ(h.ru, 7u);
  EXPECT_EQ(m.tag, h.block_id);
  std::uint8_t seg = 1;
  std::uint32_t offset = 0;
  for (std::uint32_t i = 0; i < count; ++i) {
    EXPECT_EQ(entries[i].size, sf_size);
    if (offset == m.segments[seg].length) {
      ++seg;
      offset = 0;
    }
    const auto bytes = m.segments[seg].bytes().subspan(offset, entries[i].size);
    std::array<wire::FedFragmentInfo, 8> infos{};
    wire::FedCheck check;
    check.event = first + i;
    const wire::FedWalk w = wire::walk_super_fragment(bytes, infos, check);
    EXPECT_EQ(w.status, wire::FedStatus::ok) << "event " << first + i;
    offset += entries[i].size;
  }
  return h;
}

TEST(ReadoutStoreTest, CutsABlockWithOneSliceWhenItsEventsShareAChunk) {
  auto source = emulator(1024);
  auto store = ReadoutStore::create(small_store(1 << 16, 4, 8), source->max_super_fragment_size());
  ASSERT_TRUE(store) << store.error().message();
  auto& s = **store;
  produce(s, *source, 20);
  EXPECT_EQ(s.assign(assign(0, 0, 8)), AssignOutcome::accepted);
  ASSERT_TRUE(s.cut());
  ASSERT_EQ(s.ready_count(), 1u);
  EXPECT_EQ(s.ready_at(0).bu, 3u);
  transport::Message m;
  s.stage(0, m);
  EXPECT_EQ(m.segment_count, 2) << "descriptor + one chunk slice";
  check_block(m, 0, 8, 2048);
  EXPECT_EQ(m.size(), wire::block_descriptor_size(8) + 8 * 2048);
}

TEST(ReadoutStoreTest, BlocksSpanningChunksGetOneSlicePerChunk) {
  auto source = emulator(1000 / 8 * 8, 3);  // 2988-byte super-fragments
  const std::uint32_t sf = 3 * 1000 / 8 * 8;
  auto store = ReadoutStore::create(small_store(8192, 10, 10), source->max_super_fragment_size());
  ASSERT_TRUE(store) << store.error().message();
  auto& s = **store;
  produce(s, *source, 10);  // two per chunk: five chunks
  EXPECT_EQ(s.chunks_shared(), 0u) << "no block yet";
  EXPECT_EQ(s.assign(assign(0, 0, 10)), AssignOutcome::accepted);
  ASSERT_TRUE(s.cut());
  transport::Message m;
  s.stage(0, m);
  EXPECT_EQ(m.segment_count, 6);
  EXPECT_EQ(s.chunks_shared(), 5u) << "the block holds the five chunks";
  check_block(m, 0, 10, sf);
}

TEST(ReadoutStoreTest, WaitsForItsEventsBeforeCutting) {
  auto source = emulator(512);
  auto store = ReadoutStore::create(small_store(1 << 16, 4, 8), source->max_super_fragment_size());
  ASSERT_TRUE(store);
  auto& s = **store;
  EXPECT_EQ(s.assign(assign(0, 0, 4)), AssignOutcome::accepted);
  EXPECT_EQ(s.assign(assign(1, 4, 4)), AssignOutcome::accepted);
  EXPECT_EQ(s.blocks_waiting(), 2u);
  produce(s, *source, 6);
  ASSERT_TRUE(s.cut());
  EXPECT_EQ(s.ready_count(), 1u);
  EXPECT_EQ(s.blocks_waiting(), 1u);
  produce(s, *source, 2);
  ASSERT_TRUE(s.cut());
  EXPECT_EQ(s.ready_count(), 2u);
  EXPECT_EQ(s.ready_at(1).block_id, 1u);
  EXPECT_EQ(s.consumed(), 8u);
}

TEST(ReadoutStoreTest, RetainsChunksUntilTheAckAndThrottlesWhenFull) {
  auto source = emulator(2048, 1);
  // 5 chunks of 8 KiB: 4 events each, 20 events at most in memory.
  auto store = ReadoutStore::create(small_store(8192, 5, 4), source->max_super_fragment_size());
  ASSERT_TRUE(store) << store.error().message();
  auto& s = **store;
  produce(s, *source, 20);
  EXPECT_EQ(s.produce(*source, kNoLimit), ProduceStatus::no_chunk);
  EXPECT_EQ(s.assign(assign(0, 0, 4)), AssignOutcome::accepted);
  ASSERT_TRUE(s.cut());
  transport::Message m;
  s.stage(0, m);
  s.mark_sent(0);
  EXPECT_EQ(s.produce(*source, kNoLimit), ProduceStatus::no_chunk) << "the block keeps its chunk";
  m.clear();  // the transport has sent it
  EXPECT_EQ(s.produce(*source, kNoLimit), ProduceStatus::no_chunk) << "retained until released";
  EXPECT_EQ(s.release_below(1), 1u);
  EXPECT_EQ(s.blocks_held(), 0u);
  EXPECT_EQ(s.produce(*source, kNoLimit), ProduceStatus::produced) << "the chunk came back";
  EXPECT_EQ(s.release_below(1), 0u) << "a repeated release frees nothing";
}

TEST(ReadoutStoreTest, ReassignResendsTheSameDataWithTheNewGeneration) {
  auto source = emulator(1024);
  auto store = ReadoutStore::create(small_store(1 << 16, 4, 8), source->max_super_fragment_size());
  ASSERT_TRUE(store);
  auto& s = **store;
  produce(s, *source, 8);
  ASSERT_EQ(s.assign(assign(5, 0, 8, 3)), AssignOutcome::accepted);
  ASSERT_TRUE(s.cut());
  transport::Message first;
  s.stage(0, first);
  s.mark_sent(0);
  s.park(3);  // the BU is gone
  EXPECT_EQ(s.ready_count(), 0u);

  EXPECT_EQ(s.assign(assign(5, 0, 8, 4, 1)), AssignOutcome::resend);
  ASSERT_EQ(s.ready_count(), 1u);
  EXPECT_EQ(s.ready_at(0).bu, 4u);
  EXPECT_EQ(s.ready_at(0).generation, 1u);
  transport::Message again;
  s.stage(0, again);
  const wire::BlockHeader h = check_block(again, 0, 8, 2048);
  EXPECT_EQ(h.generation, 1u);
  EXPECT_EQ(h.block_id, 5u);
  EXPECT_EQ(again.segments[1].buffer.data(), first.segments[1].buffer.data())
      << "same chunk, no copy";
  EXPECT_NE(again.segments[0].buffer.data(), first.segments[0].buffer.data())
      << "a fresh descriptor: the old one may still be read";
  wire::BlockHeader old;
  std::vector<wire::BlockEntry> entries(8);
  ASSERT_EQ(wire::decode_block(first.segments[0].bytes(), first.size(), old, entries),
            wire::PayloadStatus::ok);
  EXPECT_EQ(old.generation, 0u) << "the first message is untouched";

  EXPECT_EQ(s.assign(assign(5, 0, 8, 4, 1)), AssignOutcome::stale) << "a repeated re-assign";
  EXPECT_EQ(s.release_below(6), 1u) << "the EVM closed it, whoever built it";
  EXPECT_EQ(s.ready_count(), 0u);
  EXPECT_EQ(s.assign(assign(5, 0, 8, 2, 2)), AssignOutcome::stale) << "closed: nothing to resend";
}

TEST(ReadoutStoreTest, AnAckBeforeTheEventsExistSkipsThem) {
  auto source = emulator(1024);
  auto store = ReadoutStore::create(small_store(1 << 16, 4, 8), source->max_super_fragment_size());
  ASSERT_TRUE(store);
  auto& s = **store;
  ASSERT_EQ(s.assign(assign(0, 0, 4)), AssignOutcome::accepted);
  ASSERT_EQ(s.assign(assign(1, 4, 4)), AssignOutcome::accepted);
  EXPECT_EQ(s.release_below(1), 1u);  // the BU gave up waiting for this RU
  produce(s, *source, 8);
  ASSERT_TRUE(s.cut());
  ASSERT_EQ(s.ready_count(), 1u);
  EXPECT_EQ(s.ready_at(0).block_id, 1u);
  EXPECT_EQ(s.consumed(), 8u);
  EXPECT_EQ(s.release_below(2), 1u);
  s.clear();
  EXPECT_EQ(s.chunk_pool().in_use(), 0u);
}

TEST(ReadoutStoreTest, AReleaseFarAheadFreesEveryBlockBelowIt) {
  // The EVM's word is all that frees a block: a BU that died before acknowledging leaves
  // nothing behind here once the EVM has closed the block (by another BU's ack).
  auto source = emulator(1024);
  auto store = ReadoutStore::create(small_store(1 << 16, 4, 8), source->max_super_fragment_size());
  ASSERT_TRUE(store);
  auto& s = **store;
  produce(s, *source, 8);
  ASSERT_EQ(s.assign(assign(0, 0, 4)), AssignOutcome::accepted);
  ASSERT_EQ(s.assign(assign(1, 4, 4)), AssignOutcome::accepted);
  ASSERT_TRUE(s.cut());
  transport::Message m;
  s.stage(0, m);
  s.mark_sent(0);
  m.clear();
  EXPECT_EQ(s.blocks_held(), 2u);
  EXPECT_EQ(s.release_below(1000), 2u) << "a jump past the table visits every slot";
  EXPECT_EQ(s.blocks_held(), 0u);
  EXPECT_EQ(s.ready_count(), 0u);
  EXPECT_EQ(s.assign(assign(999, 8, 4, 0, 1)), AssignOutcome::stale) << "released already";
}

TEST(ReadoutStoreTest, RejectsAssignsOutOfOrderOrTooLarge) {
  auto source = emulator(1024);
  auto store = ReadoutStore::create(small_store(1 << 16, 4, 8), source->max_super_fragment_size());
  ASSERT_TRUE(store);
  auto& s = **store;
  EXPECT_EQ(s.assign(assign(0, 4, 4)), AssignOutcome::error);
  EXPECT_NE(s.error().find("expected events from 0"), std::string::npos) << s.error();
  auto store2 = ReadoutStore::create(small_store(1 << 16, 4, 8), source->max_super_fragment_size());
  EXPECT_EQ((*store2)->assign(assign(0, 0, 9)), AssignOutcome::error);
}

TEST(ReadoutStoreTest, ConfigurationErrorsSayWhatToRaise) {
  // A super-fragment larger than a chunk.
  auto big = ReadoutStore::create(small_store(8192, 4, 8), 9000);
  ASSERT_FALSE(big);
  EXPECT_NE(big.error().message().find("chunk_size"), std::string::npos) << big.error().message();
  // A block larger than the message limit.
  ReadoutSettings s = small_store(1 << 20, 64, 32);
  s.max_message_size = 100000;
  auto large = ReadoutStore::create(s, 8192);
  ASSERT_FALSE(large);
  EXPECT_NE(large.error().message().find("max_message_size"), std::string::npos);
  // A block that may need more than 15 chunk slices.
  auto sliced = ReadoutStore::create(small_store(16384, 64, 64), 8000);
  ASSERT_FALSE(sliced);
  EXPECT_NE(sliced.error().message().find("raise chunk_size"), std::string::npos)
      << sliced.error().message();
  EXPECT_LE(worst_case_slices(32, 16384, 4u << 20), 15u);
}

TEST(ReadoutStoreTest, PicksSmallChunksThatHoldEveryBlockWhenLeftToIt) {
  // From 1 MiB, the smallest power of two holding four super-fragments...
  EXPECT_EQ(auto_chunk_size(32, 16384), 1u << 20);
  EXPECT_EQ(auto_chunk_size(32, 300000), 2u << 20);
  // ... that a block of the most events spans in no more slices than a message carries.
  for (const std::size_t events : {1u, 32u, 512u, 4096u}) {
    for (const std::size_t sf : {64u, 16384u, 400000u}) {
      const std::size_t chunk = auto_chunk_size(events, sf);
      EXPECT_LE(worst_case_slices(events, sf, chunk), transport::kMaxSegments - 1)
          << events << " events of " << sf << " bytes in chunks of " << chunk;
      EXPECT_EQ(chunk % 64, 0u);
    }
  }
  // A store of automatic chunks builds blocks as one of given chunks does.
  auto source = emulator(2048, 8);
  auto store = ReadoutStore::create(small_store(0, 0, 32), source->max_super_fragment_size());
  ASSERT_TRUE(store) << store.error().message();
  auto& s = **store;
  produce(s, *source, 64);
  EXPECT_EQ(s.assign(assign(0, 0, 32)), AssignOutcome::accepted);
  ASSERT_TRUE(s.cut());
  transport::Message m;
  s.stage(0, m);
  EXPECT_EQ(m.segment_count, 2) << "descriptor + one chunk slice";
  check_block(m, 0, 32, 8 * 2048);
}

}  // namespace
}  // namespace daqflow::apps::evb
