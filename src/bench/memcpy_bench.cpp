// The built-in memcpy reference (in-process and shared-memory transports) and `daqflow bench
// memcpy`: bandwidth of copying blocks of a size between two buffers.
#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <vector>

#include "daqflow/bench/references.hpp"
#include "daqflow/bench/runners.hpp"
#include "daqflow/bench/sweep.hpp"

namespace daqflow::bench {

double measure_memcpy_mb_s(std::uint64_t size, double seconds) {
  if (size == 0) return 0;
  std::vector<unsigned char> a(size, 0x5a);
  std::vector<unsigned char> b(size, 0xa5);
  unsigned char* src = a.data();
  unsigned char* dst = b.data();
  // Check the clock about every 4 MB copied, so that the clock costs nothing for small blocks.
  const std::uint64_t batch = std::max<std::uint64_t>(1, (4u << 20) / size);
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto until = start + std::chrono::duration<double>(seconds);
  std::uint64_t copies = 0;
  auto now = start;
  do {
    for (std::uint64_t i = 0; i < batch; ++i) {
      std::memcpy(dst, src, size);
      // Keeps the compiler from merging or dropping copies whose result is never read.
      asm volatile("" : : "r"(dst) : "memory");
      std::swap(src, dst);
    }
    copies += batch;
    now = Clock::now();
  } while (now < until);
  const double elapsed = std::chrono::duration<double>(now - start).count();
  return static_cast<double>(copies) * static_cast<double>(size) / 1e6 / elapsed;
}

std::string command_line(const MemcpyOptions& o) {
  return fmt::format("daqflow bench memcpy --sizes {} --duration {:g}", format_sweep(o.sizes),
                     o.seconds);
}

Result<BenchOutput> run_memcpy(const MemcpyOptions& o, BenchEnv& env) {
  if (o.sizes.empty()) return Error("memcpy: --sizes needs at least one value");
  BenchOutput out;
  ResultSet& r = out.result;
  r.bench = "memcpy";
  r.stem = "memcpy";
  r.command = command_line(o);
  r.params = {{"sizes", o.sizes}, {"seconds_per_size", o.seconds}};
  r.columns = {"message_size", "mb_s"};
  Series s{"memcpy", {}, Series::Style::points_and_line};
  for (std::size_t i = 0; i < o.sizes.size(); ++i) {
    const auto size = o.sizes[i];
    if (env.progress != nullptr) {
      env.progress->begin(static_cast<int>(i + 1), static_cast<int>(o.sizes.size()),
                          fmt::format("memcpy {} B", size));
    }
    const double mb_s = measure_memcpy_mb_s(size, o.seconds);
    add_row(r, {size, mb_s});
    r.summary[fmt::format("mb_s_{}", size)] = mb_s;
    s.points.emplace_back(static_cast<double>(size), mb_s);
  }
  if (env.progress != nullptr) env.progress->finish();
  out.plot.title = "memcpy bandwidth";
  out.plot.x_label = "block size (bytes)";
  out.plot.y_label = "bandwidth (MB/s)";
  out.plot.log_x = true;
  out.plot.series = {s};
  return out;
}

}  // namespace daqflow::bench
