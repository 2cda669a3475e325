#pragma once
// Sweep values on the command line and the statistics that combine several receivers' samples.

#include <cstdint>
#include <string>
#include <vector>

#include "daqflow/core/result.hpp"

namespace daqflow::bench {

// "1024..4194304" (the first value, doubled until the last, which is always included),
// "1,2,4" (a list, in the given order), "8" (one value), or a mix: "64,1024..4096". Sizes may
// carry k, M or G (powers of 1024): "1k..4M". The error names the text and what was expected.
[[nodiscard]] Result<std::vector<std::uint64_t>> parse_sweep(const std::string& text,
                                                             std::uint64_t min = 1,
                                                             std::uint64_t max = UINT64_MAX);

// The canonical text of a sweep for the command line that reproduces a run: "1024,2048,4096".
[[nodiscard]] std::string format_sweep(const std::vector<std::uint64_t>& values);

// One receiver's sampled throughput, as a sink reports it.
struct ReceiverRate {
  double mean_mb_s = 0;
  double sd_mb_s = 0;  // of its per-interval rates
  double messages_per_s = 0;
  std::uint64_t samples = 0;  // intervals used
};

// Receivers combined (the mean over the samples of all receivers).
struct StreamFigures {
  double total_mean = 0;  // sum of the receivers' means
  // Of the sum, taking the receivers' interval rates as independent: sqrt(sum of variances).
  double total_sd = 0;
  double per_receiver_mean = 0;  // mean of the receivers' means
  // Of all receivers' interval rates pooled (equal weights): the spread within each receiver
  // and between receivers, sqrt(mean(sd_i^2) + variance of the means).
  double per_receiver_sd = 0;
  double messages_per_s = 0;  // summed
  std::uint64_t samples = 0;  // the fewest intervals any receiver used
};

[[nodiscard]] StreamFigures combine_receivers(const std::vector<ReceiverRate>& receivers);

}  // namespace daqflow::bench
