#pragma once
// `worker`: a filter-farm node (docs/farm.md). It tells its SFC it is ready (a token with no
// decision), processes the events the SFC sends it one at a time, in order, and answers each with
// a decision, which is also its next token: accept or reject, the trigger bits, and for an
// accepted event the processed data.
//
// Processing comes from a model (an accept fraction, times drawn from a distribution, longer for
// accepted events, and output of a fixed size whose first 8 bytes are the event number) or from
// a user function: in a shared library (daqflow/farm_plugin.h), or in Python, through the filter
// host plugin of the daqflow package (python_filter.hpp). A model's time is waited, not spent:
// the worker does not occupy a core, so that many workers share a small machine; a plugin runs on
// the worker's thread for as long as it takes. An event the plugin fails on fails the worker, or
// (on_error: reject) is counted in events_failed and rejected.
//
// Failures: a fence from the SFC (it declared this worker lost, e.g. after a freeze) makes it
// drop every event it holds (the SFC has given them to other workers) and send a token under the
// new epoch. Events for an older epoch are dropped and counted. Events pushed with no answer
// wanted (the SFC's push policy) are counted and dropped at once.
//
// Threading: as every application (runtime/application.hpp); the agent thread owns the data path;
// results() reads counters.

#include <array>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "apps/app_support.hpp"
#include "daqflow/core/random.hpp"
#include "daqflow/core/shared_library.hpp"
#include "daqflow/farm_plugin.h"
#include "daqflow/runtime/settings.hpp"
#include "daqflow/wire/farm.hpp"
#include "worker_queue.hpp"

namespace daqflow::apps::farm {

// A modelled processing time, microseconds.
struct TimeSettings {
  std::string dist;
  double mean_us = 0;
  double sd_us = 0;
};

struct WorkerSettings {
  static const runtime::SettingsSpec<WorkerSettings>& spec();  // worker.settings.yaml

  std::string sfc;
  struct Processing {
    std::string kind;  // model, plugin or python
    std::string library;
    std::string config;
    std::string module;
    std::string function;
    std::string python;
    std::string path;
    std::string on_error;  // fail or reject
  } processing;
  double accept_fraction = 0;
  std::uint32_t output_bytes = 0;
  std::uint64_t trigger_bits = 0;
  TimeSettings accept_time;
  TimeSettings reject_time;
  std::int64_t heartbeat_ms = 0;
  std::uint64_t seed = 0;
};

class Worker final : public runtime::ApplicationWith<Worker, WorkerSettings> {
 public:
  ~Worker() override;

  Result<void> setup(runtime::AppContext& ctx, const WorkerSettings& s) override;
  void release() override;

  [[nodiscard]] nlohmann::json results() const override;

 private:
  struct Plugin {
    core::SharedLibrary library;
    void* state = nullptr;
    daqflow_farm_process_fn process = nullptr;
    daqflow_farm_fini_fn fini = nullptr;
    daqflow_farm_error_fn error = nullptr;
    bool reject_on_error = false;
  };

  [[nodiscard]] Result<void> open_endpoint(runtime::AppContext& ctx);
  void add_metrics(runtime::MetricsRegistry& m);
  void add_handlers();
  Result<void> load_processing(const WorkerSettings::Processing& p);
  Result<void> load_plugin(const std::string& path, const std::string& config);
  // Why the plugin's last call failed, from daqflow_farm_error (empty when it does not say).
  [[nodiscard]] std::string plugin_error() const;
  void unload_plugin();
  void on_event(transport::Completion& c);
  void on_fence(const transport::Completion& c);
  // Decides on the events held, in order, and sends what is decided; returns how many it sent.
  [[nodiscard]] int decide(std::int64_t now);
  [[nodiscard]] bool start(WorkerQueue::Held& h, std::int64_t now);
  [[nodiscard]] bool decide_by_plugin(WorkerQueue::Held& h, std::byte* out);
  [[nodiscard]] bool send_token();
  void send_heartbeat(std::int64_t now);

  // Configuration.
  transport::AppIndex sfc_ = 0;
  std::uint32_t output_bytes_ = 0;
  std::int64_t heartbeat_ns_ = 0;
  Plugin plugin_;
  std::vector<std::string> ids_;

  // Agent thread.
  transport::Endpoint* endpoint_ = nullptr;
  core::Clock* clock_ = nullptr;
  core::BufferPool* pool_ = nullptr;  // decisions: descriptor + output (the data path's)
  WorkerQueue queue_;
  std::uint64_t heartbeat_seq_ = 0;
  std::int64_t next_heartbeat_ns_ = 0;

  // Metrics.
  runtime::Counter* events_in_ = nullptr;
  runtime::Counter* bytes_in_ = nullptr;
  runtime::Counter* events_accepted_ = nullptr;
  runtime::Counter* events_rejected_ = nullptr;
  runtime::Counter* events_failed_ = nullptr;   // the plugin failed on them (rejected)
  runtime::Counter* events_dropped_ = nullptr;  // fenced or of an older epoch
  runtime::Counter* events_pushed_ = nullptr;
  runtime::Counter* busy_ns_ = nullptr;
  runtime::Counter* fences_ = nullptr;
  runtime::Counter* messages_malformed_ = nullptr;
};

[[nodiscard]] runtime::AppType worker_type();

}  // namespace daqflow::apps::farm
