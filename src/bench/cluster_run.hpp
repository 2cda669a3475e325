#pragma once
// Running one generated configuration, as `daqflow run` would, for a benchmark point.

#include <string>
#include <vector>

#include "daqflow/bench/runners.hpp"
#include "daqflow/bench/sweep.hpp"
#include "daqflow/control/summary.hpp"
#include "daqflow/core/result.hpp"

namespace daqflow::bench {

// Writes the configuration to <out>/runs/<name>/config.yaml, loads it, runs it for duration_s
// (0: until the applications finish), writes the summary beside it and returns it. A run that
// failed or was stopped is an error naming the failure and the log folder.
[[nodiscard]] Result<control::RunSummary> run_point(const std::string& yaml,
                                                    const std::string& name, double duration_s,
                                                    BenchEnv& env);

// The folder run_point uses for a point, for settings that need it before (run.output).
[[nodiscard]] std::string point_dir(const BenchEnv& env, const std::string& name);

// The results object of the application `id` in a summary (an empty object when absent).
[[nodiscard]] const nlohmann::json& app_results(const control::RunSummary& summary,
                                                const std::string& id);

// The figures of sinks sink0 .. sink<receivers - 1> of a stream point; an error when a sink saw
// a sequence or pattern error, or received nothing (a transport that never got going).
[[nodiscard]] Result<std::vector<ReceiverRate>> receiver_rates(const control::RunSummary& summary,
                                                               int receivers);

}  // namespace daqflow::bench
