#pragma once
// The run sequence of `daqflow run` (docs/architecture.md, "Run control"), on this machine:
//
//   1. start one executive per process group and wait until every control port answers;
//   2. Configure every context, wait until every application is Ready;
//   3. Enable the applications rank by rank (AppType::enable_rank ascending), waiting for each
//      rank to be Enabled before the next;
//   4. poll every application each status interval and report a status line, until the duration
//      passes, a stop is requested, or the applications are done: every one reports finished,
//      or one does and nothing more arrives anywhere between two polls (the data it sent has
//      landed; a bounded benchmark ends early, an unbounded consumer does not hold it up);
//   5. Halt rank by rank (descending), collect every application's state, metrics and results,
//      shut the executives down and fold the results into the summary.
//
// The first failure (a context that died, an application gone Failed with its reason, a state
// not reached in time) ends the run: what still runs is halted and shut down, and the summary
// says which context or application failed and why.
//
// run_cluster() never throws and always ends every process it started.

#include <atomic>
#include <chrono>
#include <string>

#include "daqflow/control/status.hpp"
#include "daqflow/control/summary.hpp"
#include "daqflow/runtime/application.hpp"
#include "daqflow/runtime/config.hpp"

namespace daqflow::control {

struct RunOptions {
  std::string config_path;
  std::string self;          // the daqflow executable the contexts run
  std::string log_dir;       // the executives' logs: <log_dir>/<first context>.log
  std::string record_dir;    // non-empty: the executives record their samples there
  double duration_s = 10.0;  // <= 0: until finished or stopped
  double status_interval_s = 1.0;
  std::chrono::milliseconds reach_timeout{15000};       // control ports answering
  std::chrono::milliseconds configure_timeout{30000};   // every application Ready
  std::chrono::milliseconds transition_timeout{15000};  // each rank Enabled, each rank Halted
  std::chrono::milliseconds exit_grace{10000};          // processes ending after shutdown
  // Take over a run whose executives are running (an earlier controller started them and
  // died): find them at their control ports, and go on from monitoring if every application is
  // Enabled, from configuring if every one is Halted.
  bool attach = false;
};

// Where the run reports progress. Called on the thread running run_cluster().
class RunReporter {
 public:
  virtual ~RunReporter() = default;
  // A step or an event, one line: "enabling rank 1: sink0, sink1".
  virtual void note(const std::string& text) = 0;
  // Every status interval while the run is enabled.
  virtual void status(const StatusLine& line) = 0;
};

// Runs the configuration to the end. stop_requests counts requests from outside (signals): the
// first ends the enabled phase and halts cleanly; a second one kills the executives at once.
[[nodiscard]] RunSummary run_cluster(const runtime::ClusterConfig& config,
                                     const runtime::AppRegistry& registry,
                                     const RunOptions& options, RunReporter& reporter,
                                     const std::atomic<int>& stop_requests);

}  // namespace daqflow::control
