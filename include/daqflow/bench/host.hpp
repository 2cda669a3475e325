#pragma once
// The machine a benchmark ran on, as every result file records it: a figure only means something
// beside the hardware that produced it.

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace daqflow::bench {

struct HostInfo {
  std::string hostname;
  int cores = 0;          // online CPUs
  std::string cpu_model;  // "model name" of /proc/cpuinfo; "unknown" when absent
  std::string kernel;     // uname -r
  double memory_gib = 0;  // MemTotal, GiB, one decimal
};

// Reads /proc and uname(); fields that cannot be read stay empty or 0.
[[nodiscard]] HostInfo host_info();

// The CPUs this process may run on (its affinity mask), in increasing order.
[[nodiscard]] std::vector<int> usable_cpus();

[[nodiscard]] nlohmann::json to_json(const HostInfo& host);

}  // namespace daqflow::bench
