// The BU's disk writers on their own: batches of built events (32 events of 4 super-fragments
// of 16 kB, as examples/local.yaml builds them) through the .dqf writer and the HDF5 writer
// into files in a temporary directory, each batch waited for as the BU does before it is
// acknowledged. Bytes per second are the events' bytes.
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "daqflow/apps/output/output.hpp"
#include "micro_support.hpp"

namespace daqflow::micro {
namespace {

namespace fs = std::filesystem;
using namespace daqflow::apps::output;  // NOLINT(google-build-using-namespace): benchmark file

constexpr std::size_t kEvents = 32;
constexpr std::size_t kPieces = 4;
constexpr std::size_t kPieceBytes = 16384;

// range(0): 0 = kind file (.dqf), 1 = kind hdf5.
void BM_OutputWrite(benchmark::State& state) {
  const bool hdf5 = state.range(0) == 1;
  const fs::path dir =
      fs::temp_directory_path() / ("daqflow-micro-output-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  std::vector<std::byte> data(kEvents * kPieces * kPieceBytes);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<std::byte>(i * 131 + 7);
  OutputBatch batch;
  for (std::size_t e = 0; e < kEvents; ++e) {
    BuiltEvent ev;
    ev.number = e;
    ev.lumi = 1;
    ev.first_piece = static_cast<std::uint32_t>(batch.pieces.size());
    ev.piece_count = kPieces;
    for (std::size_t p = 0; p < kPieces; ++p) {
      batch.pieces.push_back(
          {data.data() + (e * kPieces + p) * kPieceBytes, static_cast<std::uint32_t>(kPieceBytes)});
      ev.size += kPieceBytes;
    }
    batch.events.push_back(ev);
  }
  OutputContext context;
  context.run_number = 1;
  context.bu_id = "bu1";
  context.queue_depth = 2;
  auto output = take(
      make_output({{"kind", hdf5 ? "hdf5" : "file"}, {"dir", dir.string()}, {"max_file_mb", 256}},
                  context),
      "output");
  Backoff backoff;
  std::uint64_t next = 0;
  for (auto _ : state) {
    for (auto& ev : batch.events) ev.number = next++;
    if (!output->submit(&batch)) throw std::runtime_error("output queue full");
    while (output->poll_done() == nullptr) backoff.pause();
  }
  if (auto closed = output->close(); !closed) throw std::runtime_error(closed.error().message());
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(data.size()));
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kEvents));
  output.reset();
  fs::remove_all(dir);
}
BENCHMARK(BM_OutputWrite)->ArgName("hdf5")->Arg(0)->Arg(1)->UseRealTime();

}  // namespace
}  // namespace daqflow::micro
