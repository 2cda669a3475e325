// CMS FED fragments: the CRC-16, writing a fragment, validating one (with and without its CRC),
// and walking a super-fragment of several FEDs from its last trailer.
#include <cstddef>
#include <span>
#include <stdexcept>
#include <vector>

#include "daqflow/wire/fed.hpp"
#include "daqflow/wire/fed_crc.hpp"
#include "micro_support.hpp"

namespace daqflow::micro {
namespace {

constexpr std::uint64_t kSeed = 7;

wire::FedHeaderFields header_for(std::uint16_t source, std::uint32_t l1) {
  wire::FedHeaderFields h;
  h.event_type = 1;
  h.l1_id = l1;
  h.bx_id = 100;
  h.source_id = source;
  return h;
}

std::vector<std::byte> fragment_of(std::size_t size, std::uint16_t source = 12) {
  std::vector<std::byte> f(size);
  if (wire::write_fragment(f, header_for(source, 5), kSeed) != wire::FedStatus::ok) {
    throw std::runtime_error("write_fragment failed");
  }
  return f;
}

void BM_FedCrc16(benchmark::State& state) {
  const auto data = fragment_of(static_cast<std::size_t>(state.range(0)));
  for (auto _ : state) {
    benchmark::DoNotOptimize(wire::fed_crc16(data));
  }
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(data.size()));
}
BENCHMARK(BM_FedCrc16)->Arg(256)->Arg(2048)->Arg(16384)->Arg(1 << 20);

void BM_FedWriteFragment(benchmark::State& state) {
  std::vector<std::byte> f(static_cast<std::size_t>(state.range(0)));
  std::uint32_t l1 = 0;
  for (auto _ : state) {
    if (wire::write_fragment(f, header_for(12, l1++ & wire::kFedL1IdMask), kSeed) !=
        wire::FedStatus::ok) {
      state.SkipWithError("write_fragment");
    }
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(f.size()));
}
BENCHMARK(BM_FedWriteFragment)->Arg(2048)->Arg(16384);

// range(0): fragment size; range(1): 1 to check the CRC too.
void BM_FedCheckFragment(benchmark::State& state) {
  const auto f = fragment_of(static_cast<std::size_t>(state.range(0)));
  wire::FedCheck expect;
  expect.source_id = 12;
  expect.event = 5;
  expect.verify_crc = state.range(1) != 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(f.data());
    if (wire::check_fragment(f, expect) != wire::FedStatus::ok) state.SkipWithError("check");
  }
  state.SetItemsProcessed(state.iterations());
  // Without the CRC only the header and trailer are read: bytes/s would mean nothing.
  if (expect.verify_crc) {
    state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(f.size()));
  }
}
BENCHMARK(BM_FedCheckFragment)
    ->ArgNames({"size", "crc"})
    ->Args({256, 0})
    ->Args({256, 1})
    ->Args({2048, 0})
    ->Args({2048, 1})
    ->Args({16384, 0})
    ->Args({16384, 1});

// A super-fragment of range(0) FEDs of 2 kB each, walked with every fragment checked;
// range(1): 1 to check the CRCs too.
void BM_FedWalkSuperFragment(benchmark::State& state) {
  const auto feds = static_cast<std::size_t>(state.range(0));
  constexpr std::size_t kFragment = 2048;
  std::vector<std::byte> super(feds * kFragment);
  for (std::size_t i = 0; i < feds; ++i) {
    const std::span<std::byte> f(super.data() + i * kFragment, kFragment);
    if (wire::write_fragment(f, header_for(static_cast<std::uint16_t>(100 + i), 5), kSeed) !=
        wire::FedStatus::ok) {
      throw std::runtime_error("write_fragment failed");
    }
  }
  std::vector<wire::FedFragmentInfo> info(feds);
  wire::FedCheck each;
  each.event = 5;
  each.verify_crc = state.range(1) != 0;
  for (auto _ : state) {
    const wire::FedWalk w = wire::walk_super_fragment(super, info, each);
    if (w.status != wire::FedStatus::ok || w.count != feds) state.SkipWithError("walk");
    benchmark::DoNotOptimize(info.data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(feds));
  if (each.verify_crc) {
    state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(super.size()));
  }
}
BENCHMARK(BM_FedWalkSuperFragment)
    ->ArgNames({"feds", "crc"})
    ->Args({8, 0})
    ->Args({8, 1})
    ->Args({64, 0});

}  // namespace
}  // namespace daqflow::micro
