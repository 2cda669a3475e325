#pragma once
// A recording of one context (`daqflow run --record DIR`, `daqflow exec --record DIR`;
// docs/monitoring.md, Recording): each sample of the history sampler also becomes one line of
// JSON appended to DIR/<context>.jsonl,
//
//   {"t": unix_ms, "context": "evm", "apps": [{"id": "evm0", "type": "evm", "state": "Enabled",
//     "counters": {"events_built": 1234, ...}, "gauges": {"events_in_flight": 768, ...}}]}
//
// with the endpoint's counters as "endpoint.<name>". Every line stands alone, so a file can be
// appended to by a later run and read while it grows; `daqflow report DIR` turns the files into a
// report.

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "daqflow/core/result.hpp"

namespace daqflow::runtime {

class ContextControl;

class Recorder {
 public:
  // Opens (creates, or appends to) DIR/<context>.jsonl, creating DIR if needed.
  [[nodiscard]] static Result<std::unique_ptr<Recorder>> open(const std::string& dir,
                                                              const std::string& context);
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  // The sampler's thread. A write that fails is logged once; the run goes on.
  void write(std::int64_t unix_ms, const ContextControl& context);
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  Recorder(std::FILE* file, std::string path) : file_(file), path_(std::move(path)) {}
  std::FILE* file_;
  std::string path_;
  bool failed_ = false;
};

}  // namespace daqflow::runtime
