// The 40-byte message header: encode, decode (every field checked), and the payload CRC32C that
// the payload_crc option adds on both sides.
#include <array>
#include <cstddef>
#include <vector>

#include "daqflow/wire/crc32c.hpp"
#include "daqflow/wire/header.hpp"
#include "micro_support.hpp"

namespace daqflow::micro {
namespace {

wire::MessageHeader sample_header(std::uint32_t payload_size) {
  wire::MessageHeader h;
  h.type = wire::MessageType::data;
  h.source = 3;
  h.destination = 7;
  h.sequence = 123456;
  h.tag = 42;
  h.payload_size = payload_size;
  return h;
}

void BM_HeaderEncode(benchmark::State& state) {
  alignas(8) std::array<std::byte, wire::kHeaderSize> out{};
  wire::MessageHeader h = sample_header(4096);
  for (auto _ : state) {
    ++h.sequence;
    wire::encode(h, out);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(wire::kHeaderSize));
}
BENCHMARK(BM_HeaderEncode);

void BM_HeaderDecode(benchmark::State& state) {
  alignas(8) std::array<std::byte, wire::kHeaderSize> in{};
  wire::encode(sample_header(4096), in);
  wire::MessageHeader h;
  for (auto _ : state) {
    benchmark::DoNotOptimize(in.data());
    if (wire::decode(in, 1u << 20, h) != wire::DecodeStatus::ok) state.SkipWithError("decode");
    benchmark::DoNotOptimize(h);
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(wire::kHeaderSize));
}
BENCHMARK(BM_HeaderDecode);

std::vector<std::byte> payload_of(std::size_t size) {
  std::vector<std::byte> p(size);
  for (std::size_t i = 0; i < size; ++i) p[i] = static_cast<std::byte>(i * 131 + 7);
  return p;
}

// Sender side with payload_crc: the payload's CRC32C, then the header.
void BM_HeaderEncodeWithCrc(benchmark::State& state) {
  const auto payload = payload_of(static_cast<std::size_t>(state.range(0)));
  alignas(8) std::array<std::byte, wire::kHeaderSize> out{};
  wire::MessageHeader h = sample_header(static_cast<std::uint32_t>(payload.size()));
  h.flags = wire::kFlagPayloadCrc;
  for (auto _ : state) {
    h.crc32c = wire::crc32c(payload);
    wire::encode(h, out);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() *
                          static_cast<std::int64_t>(payload.size() + wire::kHeaderSize));
}
BENCHMARK(BM_HeaderEncodeWithCrc)->Arg(64)->Arg(4096)->Arg(65536)->Arg(1 << 20);

// The CRC-32C alone, at the sizes of microslices (a 4 kB contribution carries eight of 512 B).
void BM_Crc32c(benchmark::State& state) {
  const auto payload = payload_of(static_cast<std::size_t>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(wire::crc32c(payload));
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(payload.size()));
}
BENCHMARK(BM_Crc32c)->Arg(64)->Arg(200)->Arg(512)->Arg(2048)->Arg(8192);

// Receiver side with payload_crc: decode, then verify the payload against the header's CRC.
void BM_HeaderDecodeWithCrc(benchmark::State& state) {
  const auto payload = payload_of(static_cast<std::size_t>(state.range(0)));
  alignas(8) std::array<std::byte, wire::kHeaderSize> in{};
  wire::MessageHeader sent = sample_header(static_cast<std::uint32_t>(payload.size()));
  sent.flags = wire::kFlagPayloadCrc;
  sent.crc32c = wire::crc32c(payload);
  wire::encode(sent, in);
  wire::MessageHeader h;
  for (auto _ : state) {
    benchmark::DoNotOptimize(in.data());
    if (wire::decode(in, 1u << 21, h) != wire::DecodeStatus::ok ||
        wire::verify_payload(h, payload) != wire::DecodeStatus::ok) {
      state.SkipWithError("decode or CRC failed");
    }
    benchmark::DoNotOptimize(h);
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() *
                          static_cast<std::int64_t>(payload.size() + wire::kHeaderSize));
}
BENCHMARK(BM_HeaderDecodeWithCrc)->Arg(64)->Arg(4096)->Arg(65536)->Arg(1 << 20);

}  // namespace
}  // namespace daqflow::micro
