#pragma once
// `source`: the sending half of the stream benchmark (a DataSource). Once enabled it keeps the
// pipeline to every destination full with messages of message_size bytes, each tagged with its
// per-destination sequence number (0, 1, 2, ...) and carrying the pattern of
// daqflow/apps/pattern.hpp.
//
// Scheduling: destinations are served round-robin, and each one gets a complete pipeline (as many
// messages as it has free pipeline slots) before the next is served; the destination served first
// rotates every round so that none is favoured. `count` (when not 0) is the number of messages per
// destination; the last one carries wire::kFlagLast so that a sink knows the stream is complete.
//
// Threading: as every application (runtime/application.hpp); the host owns the run state.

#include <array>
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "app_support.hpp"
#include "daqflow/apps/pattern.hpp"
#include "daqflow/core/buffer_pool.hpp"
#include "daqflow/runtime/settings.hpp"

namespace daqflow::apps {

struct SourceSettings {
  static const runtime::SettingsSpec<SourceSettings>& spec();  // source.settings.yaml

  std::vector<std::string> destinations;
  std::uint32_t message_size = 0;
  std::uint32_t pipeline_depth = 0;  // 0: the transports'
  std::uint64_t count = 0;           // per destination; 0: unlimited
  std::string verify;
  bool fill = false;
};

class Source final : public runtime::ApplicationWith<Source, SourceSettings> {
 public:
  Result<void> setup(runtime::AppContext& ctx, const SourceSettings& s) override;
  void release() override;

  [[nodiscard]] nlohmann::json results() const override;
  // Its send pool: shared memory over shm.
  [[nodiscard]] static runtime::HostNeeds host_needs(const runtime::ApplicationConfig& app,
                                                     const runtime::ClusterConfig& cluster);

 private:
  // The send pool's buffers: twice the pipeline to each destination (a buffer comes back only
  // when its receiver drops it), and two.
  [[nodiscard]] static std::size_t send_buffers(std::uint32_t depth, std::size_t destinations) {
    return 2 * std::size_t{depth} * destinations + 2;
  }
  [[nodiscard]] Result<void> take_destinations(runtime::AppContext& ctx,
                                               const std::vector<std::string>& names);
  [[nodiscard]] Result<void> open_endpoint(runtime::AppContext& ctx);
  void add_metrics(runtime::MetricsRegistry& m);
  void add_handlers();

  struct Destination {
    transport::AppIndex index = 0;
    std::uint64_t next_seq = 0;   // sequence number of the next message to post
    std::uint32_t in_flight = 0;  // posted, not yet completed
    bool staged = false;          // `message` holds the filled message next_seq
    bool dead = false;            // closed or failed: nothing more is sent to it
    transport::Message message;
  };

  void on_sent(const transport::Completion& c);
  void publish_done();
  int work(std::int64_t now);
  int post_round();
  bool stage(Destination& d);
  [[nodiscard]] transport::SendStatus post_copy(Destination& d);
  // Message seq's pattern (verify_) into payload.
  void write_payload(std::span<std::byte> payload, std::uint64_t seq) const;
  [[nodiscard]] std::uint16_t flags_of(std::uint64_t seq) const;
  void on_send_failure(Destination& d, transport::SendStatus status);
  void lose(Destination& d, const std::string& why);
  [[nodiscard]] Destination* destination_of(transport::AppIndex peer);

  // Configuration.
  transport::AppIndex self_ = 0;
  std::uint32_t message_size_ = 0;
  std::uint32_t depth_ = 0;
  std::uint64_t count_ = 0;
  Verify verify_ = Verify::ends;
  bool fill_ = false;  // ends: every byte written all the same
  std::vector<std::string> ids_;
  std::vector<std::int32_t> slot_of_;  // AppIndex -> position in dests_, -1 if none

  // Owned between configure and release.
  transport::Endpoint* endpoint_ = nullptr;
  core::Clock* clock_ = nullptr;
  core::BufferPool* pool_ = nullptr;  // the data path's
  // A message small enough for the endpoint's post_copy() is written here and copied by it, with
  // no buffer per message; empty: messages go in buffers of pool_.
  std::vector<std::byte> scratch_;
  std::vector<Destination> dests_;
  std::size_t cursor_ = 0;
  std::uint64_t total_in_flight_ = 0;  // posted, not completed, to live destinations
  struct Done {
    std::uint64_t messages = 0, bytes = 0;
  } done_;                   // completed this round, not yet in the metrics
  bool starved_ = false;     // the last round found the pool empty
  bool pool_bound_ = false;  // pool_ bound to the agent's thread
  // Metrics, counted by the agent thread and read by results().
  runtime::Counter* messages_out_ = nullptr;
  runtime::Counter* bytes_out_ = nullptr;
  runtime::Counter* back_pressured_ = nullptr;
  runtime::Gauge* in_flight_gauge_ = nullptr;

  // Shared with other threads.
  std::atomic<std::int64_t> first_post_ns_{0};
  std::atomic<std::int64_t> last_done_ns_{0};
};

[[nodiscard]] runtime::AppType source_type();

}  // namespace daqflow::apps
