// Super-fragment assembly, both halves of the event builder:
//  - RU: the FED emulator writes each event's super-fragment into chunk memory (template and
//    per-event pattern payloads), and the readout store cuts blocks of them for the BUs;
//  - BU: the block builder gathers one block's parts from every RU and builds its events as
//    references into the received buffers, checking every super-fragment (with and without
//    the FED CRCs).
// Sizes follow examples/local.yaml: 8 FEDs per RU, 2 kB fragments, blocks of 32 events.
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "daqflow/apps/evb/block_builder.hpp"
#include "daqflow/apps/evb/readout_store.hpp"
#include "daqflow/apps/fed/emulator.hpp"
#include "daqflow/apps/fed/super_fragment_check.hpp"
#include "micro_support.hpp"

namespace daqflow::micro {
namespace {

using namespace daqflow::apps::evb;  // NOLINT(google-build-using-namespace): benchmark file
using namespace daqflow::apps::fed;  // NOLINT(google-build-using-namespace): benchmark file

constexpr std::uint32_t kFeds = 8;
constexpr std::uint32_t kBlockEvents = 32;
constexpr std::uint64_t kNoLimit = std::numeric_limits<std::uint64_t>::max();

std::unique_ptr<FedEmulator> emulator(std::uint32_t ru, PayloadKind payload) {
  EmulatorSettings e;
  e.feds = kFeds;
  e.first_fed_id = static_cast<std::uint16_t>(100 * ru);
  e.size.dist = SizeDistribution::fixed;
  e.size.mean = 2048;
  e.seed = ru + 1;
  e.payload = payload;
  e.period = 64;
  return take(FedEmulator::create(e), "emulator");
}

// range(0): 0 = template payload (the default), 1 = per-event pattern.
void BM_EmulatorSuperFragment(benchmark::State& state) {
  auto source = emulator(
      1, state.range(0) == 0 ? PayloadKind::fixed_template : PayloadKind::per_event_pattern);
  std::vector<std::byte> out(source->max_super_fragment_size());
  std::uint64_t event = 0;
  std::int64_t bytes = 0;
  for (auto _ : state) {
    const Produced p = source->produce(event++, out);
    if (p.status != Produced::Status::ready) state.SkipWithError("emulator not ready");
    bytes += p.bytes;
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(bytes);
}
BENCHMARK(BM_EmulatorSuperFragment)->ArgName("pattern")->Arg(0)->Arg(1);

ReadoutSettings readout_settings(transport::AppIndex ru) {
  ReadoutSettings s;
  s.name = "micro-ru";
  s.ru = ru;
  s.chunk_size = 4u << 20;
  s.chunks = 8;
  s.event_capacity = 1024;
  s.block_capacity = 64;
  s.max_block_events = kBlockEvents;
  return s;
}

// One RU's cycle per block: produce 32 super-fragments into the store, assign, cut, stage the
// message, mark it sent and release it (which frees its chunk references).
void BM_ReadoutBlockCycle(benchmark::State& state) {
  auto source = emulator(1, PayloadKind::fixed_template);
  auto store =
      take(ReadoutStore::create(readout_settings(1), source->max_super_fragment_size()), "store");
  transport::Message m;
  std::uint64_t block = 0;
  std::int64_t bytes = 0;
  for (auto _ : state) {
    const std::uint64_t first = block * kBlockEvents;
    while (store->produced() < first + kBlockEvents) {
      if (store->produce(*source, kNoLimit) != ProduceStatus::produced) {
        state.SkipWithError(store->error().c_str());
        break;
      }
    }
    if (store->assign(wire::Assign{block, first, kBlockEvents, 0, 0}) != AssignOutcome::accepted ||
        !store->cut() || store->ready_count() != 1) {
      state.SkipWithError("assign or cut failed");
      break;
    }
    store->stage(0, m);
    bytes += static_cast<std::int64_t>(m.size());
    store->mark_sent(0);
    m.clear();
    (void)store->release_below(block + 1);
    ++block;
  }
  state.SetItemsProcessed(state.iterations() * kBlockEvents);
  state.SetBytesProcessed(bytes);
}
BENCHMARK(BM_ReadoutBlockCycle);

// The BU side for `rus` RUs: blocks are cut once; each iteration stages every RU's part afresh
// (new references to the same chunks), hands them to the builder and builds the block; the
// batch is then dropped, as an output does once it is done with it.
// range(0): RUs; range(1): check the super-fragments; range(2): check the FED CRCs too.
void BM_BlockBuild(benchmark::State& state) {
  const auto rus = static_cast<std::uint32_t>(state.range(0));
  struct Ru {
    std::unique_ptr<FedEmulator> source;
    std::unique_ptr<ReadoutStore> store;
  };
  std::vector<Ru> parts;
  BuilderSettings bs;
  for (std::uint32_t r = 0; r < rus; ++r) {
    Ru ru;
    ru.source = emulator(r, PayloadKind::fixed_template);
    ru.store = take(ReadoutStore::create(readout_settings(r), ru.source->max_super_fragment_size()),
                    "store");
    while (ru.store->produced() < kBlockEvents) {
      if (ru.store->produce(*ru.source, kNoLimit) != ProduceStatus::produced) {
        throw std::runtime_error("produce failed: " + ru.store->error());
      }
    }
    if (ru.store->assign(wire::Assign{0, 0, kBlockEvents, rus, 0}) != AssignOutcome::accepted ||
        !ru.store->cut()) {
      throw std::runtime_error("cut failed: " + ru.store->error());
    }
    parts.push_back(std::move(ru));
    bs.rus.push_back(r);
    bs.feds.push_back(kFeds);
  }
  bs.slots = 2;
  bs.max_block_events = kBlockEvents;
  bs.check_fragments = state.range(1) != 0;
  bs.check_crc = state.range(2) != 0;
  auto builder = take(BlockBuilder::create(bs), "builder");
  apps::output::OutputBatch batch;
  batch.events.reserve(kBlockEvents);
  batch.pieces.reserve(builder->max_pieces());
  batch.buffers.reserve(builder->max_buffers());
  transport::Message m;
  std::int64_t bytes = 0;
  // The builder refuses a block id it built recently, so every iteration renumbers the block in
  // the staged descriptors (the store's own copy; no peer holds it).
  std::vector<wire::BlockHeader> headers(rus);
  std::vector<wire::BlockEntry> entries(kBlockEvents);
  for (std::uint32_t r = 0; r < rus; ++r) {
    parts[r].store->stage(0, m);
    if (wire::decode_block(m.segments[0].bytes(), m.size(), headers[r], entries) !=
        wire::PayloadStatus::ok) {
      throw std::runtime_error("block descriptor does not decode");
    }
    m.clear();
  }
  std::uint64_t block = 0;
  for (auto _ : state) {
    ++block;
    for (std::uint32_t r = 0; r < rus; ++r) {
      parts[r].store->stage(0, m);
      headers[r].block_id = block;
      wire::encode(headers[r], m.segments[0].bytes().first<wire::kBlockHeaderSize>());
      const PartOutcome o = builder->on_part(r, m, 0);
      if (o != PartOutcome::first && o != PartOutcome::added) {
        state.SkipWithError(("part refused: " + std::to_string(static_cast<int>(o))).c_str());
      }
    }
    const int slot = builder->ready(0);
    if (slot < 0) {
      state.SkipWithError("block not ready");
      break;
    }
    const BuildResult r = builder->build(slot, batch);
    if (r.built != kBlockEvents || r.corrupted != 0) state.SkipWithError(r.problem.c_str());
    bytes += static_cast<std::int64_t>(r.bytes);
    batch.clear();
  }
  state.SetItemsProcessed(state.iterations() * kBlockEvents);
  // Events are built as references: only with the CRC is every byte read.
  if (bs.check_crc) state.SetBytesProcessed(bytes);
}
BENCHMARK(BM_BlockBuild)
    ->ArgNames({"rus", "check", "crc"})
    ->Args({3, 0, 0})
    ->Args({3, 1, 0})
    ->Args({3, 1, 1})
    ->Args({8, 1, 0});

}  // namespace
}  // namespace daqflow::micro
