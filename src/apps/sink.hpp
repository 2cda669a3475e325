#pragma once
// `sink`: the receiving half of the stream benchmark (a DataDrain). It checks every message
// (per-source sequence numbers 0, 1, 2, ... in the tag, and the payload pattern of
// daqflow/apps/pattern.hpp), drops it at once, and samples the bytes and messages received at a
// fixed interval to report a throughput with the first and last interval dropped.
//
// The first error fails the application with a reason naming the source and the sequence
// (the host keeps only the first failure); every error is counted. A source closing its connection
// is normal. The sink is finished once every source that sends to it has sent its last message
// (sources with a count); sources are those listed in `sources`, or else every `source` application
// of the cluster whose destinations name this sink.
//
// Threading: as for every application (see runtime/application.hpp); results() reads the
// samples published by the agent thread.

#include <array>
#include <atomic>
#include <string>
#include <vector>

#include "app_support.hpp"
#include "daqflow/apps/pattern.hpp"
#include "daqflow/apps/sampler.hpp"
#include "daqflow/runtime/settings.hpp"

namespace daqflow::apps {

struct SinkSettings {
  static const runtime::SettingsSpec<SinkSettings>& spec();  // sink.settings.yaml

  std::vector<std::string> sources;  // empty: any
  std::string verify;
  std::int64_t sample_interval_ms = 0;
};

class Sink final : public runtime::ApplicationWith<Sink, SinkSettings> {
 public:
  Result<void> setup(runtime::AppContext& ctx, const SinkSettings& s) override;
  Result<void> enable() override;
  Result<void> suspend() override;
  Result<void> resume() override;
  void begin_halt() override;
  void release() override;

  [[nodiscard]] nlohmann::json results() const override;

  // Adds this sink's figures to the run's results: sums of throughput_mb_s and messages_per_s,
  // and "sinks": {id: {throughput_mb_s, messages_per_s}}.
  static void fold_results(nlohmann::json& run, const std::string& id, const nlohmann::json& app);

 private:
  [[nodiscard]] Result<void> take_sources(runtime::AppContext& ctx,
                                          const std::vector<std::string>& listed);
  void add_handlers();

  struct SourceState {
    std::uint64_t expected = 0;  // next sequence number
    bool allowed = false;        // may send to us
    bool awaited = false;        // counted for finished(): a source with a count
    bool complete = false;       // its last message arrived
  };

  void on_message(transport::Completion& c);
  int work(std::int64_t now);
  [[nodiscard]] std::size_t check_pattern(const transport::Message& m, std::uint64_t seq,
                                          transport::AppIndex peer) const;

  // Configuration.
  Verify verify_ = Verify::ends;
  std::int64_t interval_ms_ = 200;
  bool restricted_ = false;  // only listed sources may send
  std::vector<std::string> ids_;
  std::size_t awaited_ = 0;  // sources to complete before finished(); 0 = never finishes

  // Owned between configure and release; agent thread.
  transport::Endpoint* endpoint_ = nullptr;
  core::Clock* clock_ = nullptr;
  std::vector<SourceState> sources_;  // by AppIndex
  std::uint64_t bytes_ = 0;
  std::uint64_t messages_ = 0;
  struct Published {
    std::uint64_t bytes = 0, messages = 0;
  } published_;  // bytes_ and messages_ as the metrics have them
  std::size_t completed_ = 0;
  ThroughputSampler sampler_;
  // Metrics, counted by the agent thread and read by results().
  runtime::Counter* messages_in_ = nullptr;
  runtime::Counter* bytes_in_ = nullptr;
  runtime::Counter* errors_sequence_ = nullptr;
  runtime::Counter* errors_pattern_ = nullptr;
  runtime::Gauge* rate_gauge_ = nullptr;

  // Shared with other threads.
  std::atomic<std::int64_t> enabled_ns_{0};     // accumulated enabled time before the current span
  std::atomic<std::int64_t> enabled_at_ns_{0};  // start of the current enabled span, 0 = none
};

[[nodiscard]] runtime::AppType sink_type();

}  // namespace daqflow::apps
