#pragma once
// `daqflow report DIR`: a recording (`daqflow run --record DIR`: one <context>.jsonl of samples
// per context and run.json; docs/monitoring.md, Recording) as one self-contained HTML page:
// the event rate, throughputs, occupancies and every other metric over the run as SVG plots, a
// timeline of every application's states, and the run's notes and summary.

#include <string>

#include "daqflow/core/result.hpp"

namespace daqflow::bench {

struct RunReport {
  std::string html;
  std::size_t samples = 0;     // lines read
  std::size_t unreadable = 0;  // lines that were not a sample (e.g. cut by a crash)
  std::size_t applications = 0;
};

// An error when DIR holds no sample at all.
[[nodiscard]] Result<RunReport> render_run_report(const std::string& dir);

}  // namespace daqflow::bench
