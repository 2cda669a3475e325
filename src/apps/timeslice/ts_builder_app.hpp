#pragma once
// `ts_builder`: a compute node of the time-slice builder (docs/timeslices.md). It receives one
// contribution per input per timeslice it is given, checks each (its descriptor against the
// timeslice's geometry, every microslice descriptor's header, start time and offset, and the
// contents' CRC-32C when the input set it), and completes the timeslice without copying: the
// received messages themselves go to the output (an archive file or discard), which writes the
// timeslice descriptor and the contributions as they arrived. Once written, every input that
// contributed is acknowledged and drops its copy.
//
// A timeslice still missing contributions `timeout_ms` after its first one arrived, or missing
// only inputs that are lost, is written flagged incomplete, naming the missing inputs in the log
// and the results; with `on_incomplete: fail` the builder fails the run instead. A contribution
// that fails its checks is dropped and counted (its timeslice then lacks it); one for a
// timeslice this builder has done already (an input sending again after a loss) is dropped and
// acknowledged again; nothing is written twice by one builder.
//
// Threading: as every application (runtime/application.hpp); the agent thread owns the data
// path; the file output writes on its own thread.

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "apps/app_support.hpp"
#include "daqflow/apps/builders/control_log.hpp"
#include "daqflow/apps/output/output.hpp"
#include "daqflow/apps/sampler.hpp"
#include "daqflow/runtime/settings.hpp"
#include "daqflow/wire/timeslice.hpp"
#include "ts_assembly.hpp"
#include "ts_end_vote.hpp"
#include "ts_input_app.hpp"

namespace daqflow::apps::timeslice {

struct TsBuilderSettings {
  static const runtime::SettingsSpec<TsBuilderSettings>& spec();  // ts_builder.settings.yaml

  std::vector<std::string> inputs;
  std::int64_t timeout_ms = 0;
  std::int64_t redial_ms = 0;
  std::string on_incomplete;
  bool verify_crc = true;
  std::string manager;  // empty: round robin
  std::int64_t report_ms = 0;
  nlohmann::json output;
};

class TsBuilder final : public runtime::ApplicationWith<TsBuilder, TsBuilderSettings> {
 public:
  Result<void> setup(runtime::AppContext& ctx, const TsBuilderSettings& s) override;
  void release() override;

  void wait_for_work(std::chrono::microseconds timeout) override;
  [[nodiscard]] nlohmann::json results() const override;
  static void fold_results(nlohmann::json& run, const std::string& id, const nlohmann::json& app);

 private:
  static constexpr std::size_t kOutputDepth = 8;

  // What goes with a batch in the output: the timeslice descriptor and who contributed.
  struct Written {
    std::array<std::byte, wire::kTimesliceDescriptorSize> descriptor{};
    std::uint64_t index = 0;
    std::uint32_t epoch = 0;
    bool complete = true;
    std::vector<std::uint8_t> from;
  };

  // Configure, in order: the peers (returns the largest contribution); the endpoint; the output;
  // the run's state; the metrics; the handlers.
  [[nodiscard]] Result<std::uint64_t> take_peers(runtime::AppContext& ctx,
                                                 const TsBuilderSettings& s);
  [[nodiscard]] Result<void> open_endpoint(runtime::AppContext& ctx, const TsBuilderSettings& s,
                                           std::uint64_t largest);
  [[nodiscard]] Result<void> open_output(runtime::AppContext& ctx, const TsBuilderSettings& s,
                                         std::uint64_t largest);
  [[nodiscard]] Result<void> reset_run();
  void add_metrics(runtime::MetricsRegistry& m);
  void add_handlers();

  void on_peer_gone(transport::AppIndex peer, std::string_view reason);
  [[nodiscard]] int work(std::int64_t now);
  // A ts_contribution message: one contribution, or several back to back.
  void on_contributions(transport::Completion& c, std::size_t input, std::int64_t now);
  // One contribution of `bytes` bytes for timeslice index, in part's pieces (taken when kept).
  void on_contribution(transport::Message& part, Pieces pieces, std::uint64_t bytes,
                       std::uint64_t index, std::size_t input, std::int64_t now);
  // Writes the timeslice (with a manager: asks first); false when it must wait.
  [[nodiscard]] bool complete(TsAssembly::Timeslice& t);
  [[nodiscard]] bool write(TsAssembly::Timeslice& t);
  void on_manager(const transport::Completion& c);
  void send_report();
  bool send_to_manager(wire::MessageType type, std::uint64_t tag, std::span<const std::byte> bytes);
  [[nodiscard]] static Result<runtime::Settled> after_loss(const runtime::LostApp& lost);
  // The disk its output may fill.
  [[nodiscard]] static runtime::HostNeeds host_needs(const runtime::ApplicationConfig& app,
                                                     const runtime::ClusterConfig& cluster) {
    return output::output_host_needs(app, cluster);
  }
  [[nodiscard]] static Result<runtime::Settled> settle_round_robin(const runtime::LostApp& lost,
                                                                   const nlohmann::json& output);
  friend runtime::AppType ts_builder_type();
  int flush_outputs();
  // Acknowledges a timeslice to an input, in order: one the transport cannot take now
  // (back-pressure, no buffer) waits in the input's queue and goes before any later one.
  void send_ack(std::size_t input, std::uint64_t index, wire::TsAckStatus status);
  // Posts the acknowledgements and ts_done messages that wait.
  int post_control();
  [[nodiscard]] bool control_idle() const;
  void lose_input(std::size_t input, const std::string& why);
  // A halted input ended (it said so, or closed its link in order): nothing more comes from it.
  void input_ended(std::size_t input);
  // An input's link failed while the input may live (a reset): it is waited for redial_ms to
  // dial again (its timeslices wait as for any part, up to timeout_ms), then lost.
  void input_link_failed(std::size_t input, std::string_view why);
  void check_input_links();
  // The link to the manager failed (not closed in order): dialed again for redial_ms, then the
  // builder fails; check_manager_link() says whether it is up, and once it is back sets the
  // commit requests and the last ts_done messages to go again (redo_done() pushes those).
  void manager_link_failed(std::string_view why);
  [[nodiscard]] bool check_manager_link();
  int redo_done();
  // A message from the input: a link that failed is back (before check_input_links sees it, so
  // that the acknowledgements of what it sends again reach it).
  void heard_from(std::size_t input);

  // Configuration.
  Geometry geometry_;
  std::vector<transport::AppIndex> inputs_;
  std::int64_t timeout_ns_ = 0;
  std::int64_t redial_ns_ = 0;
  bool fail_incomplete_ = false;
  bool verify_crc_ = true;
  bool has_manager_ = false;
  transport::AppIndex manager_ = 0;
  std::int64_t report_ns_ = 0;
  std::uint32_t recv_buffers_ = 0;
  std::uint64_t here_ = 0;  // timeslices built here at once, at most
  std::vector<std::string> ids_;

  // Agent thread.
  transport::Endpoint* endpoint_ = nullptr;
  core::Clock* clock_ = nullptr;
  core::BufferPool* control_pool_ = nullptr;  // the data path's
  std::unique_ptr<output::EventOutput> output_;
  output::FilesWritten files_written_;  // the output's, for results()
  std::vector<output::OutputBatch> batches_;
  std::vector<Written> written_;  // by batch
  std::vector<output::OutputBatch*> free_;
  std::size_t in_output_ = 0;
  TsAssembly assembly_;
  // The inputs' barrel shifter, which the acknowledgements follow (builders 0: chaotic).
  struct Schedule {
    std::size_t builders = 0;
    std::size_t position = 0;  // of this builder in the inputs' builders
    std::int64_t slot_ns = 0;  // the inputs' slot_us; 0: in turns
  } schedule_;
  // The scheduled order in turns: the input holding this builder's turn (none: npos), since
  // when it last sent here, who asked for one, and who had the last.
  struct Turns {
    static constexpr std::size_t kNone = SIZE_MAX;
    std::size_t holder = kNone;
    std::int64_t active_ns = 0;
    std::vector<std::uint8_t> asked;
    std::size_t last = 0;
  } turns_;
  std::vector<std::int64_t> input_down_ns_;  // since when its link is down (0: up)
  bool any_input_down_ = false;
  // Without a manager, the halted inputs' vote on where the run ends (ts_end_vote.hpp), and
  // which inputs were told the outcome.
  TsEndVote end_vote_;
  std::optional<std::uint64_t> end_decided_;  // once decided, the same to every input
  std::vector<std::uint8_t> end_told_;
  bool end_all_told_ = false;
  // An input's vote, or its word that it ended.
  void on_end_proposed(const transport::Completion& c, std::size_t input);
  // Tells every live input the run's end once the vote is decided.
  [[nodiscard]] int tell_end();
  [[nodiscard]] bool in_turns() const { return schedule_.builders > 0 && schedule_.slot_ns == 0; }
  void on_turn(const transport::Completion& c, std::size_t input, std::int64_t now);
  // Gives the turn to the next input that asked for it (its acknowledgements go first).
  [[nodiscard]] int give_turn(std::int64_t now);
  // In turns, the contributions a round receives are checked after its turn messages: a batch
  // and the hand-back that ends it come together, and the next input then sends while this
  // builder checks the last one's batch.
  struct Received {
    transport::Completion completion;
    std::size_t input = 0;
    std::int64_t now = 0;
  };
  std::vector<Received> received_;
  int check_received();
  bool timer_slack_set_ = false;           // this agent thread's (the schedule's waits)
  std::vector<ControlLog> acks_;           // by input
  ControlLog to_manager_;                  // ts_done
  std::int64_t manager_down_ns_ = 0;       // since when its link is down (0: up)
  std::vector<wire::TsDone> recent_done_;  // the last ts_done messages, by done_count_
  std::size_t recent_done_size_ = 1024;    // how many (take_peers)
  std::uint64_t done_count_ = 0;
  std::uint64_t redo_from_ = 0;  // ts_done messages to send again: [from, to)
  std::uint64_t redo_to_ = 0;
  std::vector<transport::AppIndex> gone_;  // scratch
  std::int64_t next_expire_ns_ = 0;
  std::int64_t next_report_ns_ = 0;
  std::uint32_t epoch_ = 0;  // with a manager: fenced when it declares this builder lost
  std::uint64_t bytes_done_ = 0;
  std::uint64_t done_total_ = 0;
  ThroughputSampler sampler_;

  // Metrics (results() reports every counter under its name).
  const runtime::MetricsRegistry* metrics_ = nullptr;
  runtime::Counter* contributions_ = nullptr;
  runtime::Counter* timeslices_complete_ = nullptr;
  runtime::Counter* timeslices_incomplete_ = nullptr;
  runtime::Counter* timeslices_written_ = nullptr;
  runtime::Counter* timeslices_not_written_ = nullptr;
  std::uint64_t over_cap_seen_ = 0;  // the output's events_over_cap in returned batches
  runtime::Counter* contributions_late_ = nullptr;
  runtime::Counter* contributions_duplicate_ = nullptr;
  runtime::Counter* contributions_rejected_ = nullptr;
  runtime::Counter* messages_malformed_ = nullptr;
  runtime::Counter* contributions_fenced_ = nullptr;
  runtime::Counter* commits_denied_ = nullptr;
  runtime::Counter* fences_ = nullptr;
  runtime::Counter* bytes_in_ = nullptr;
  runtime::Counter* turns_given_ = nullptr;
  runtime::Counter* turn_messages_ = nullptr;
  runtime::Counter* end_votes_ = nullptr;
  runtime::Counter* inputs_said_ended_ = nullptr;
  runtime::Counter* turns_taken_back_ = nullptr;
  runtime::Gauge* timeslices_building_ = nullptr;

  mutable std::mutex results_mutex_;
  output::OutputStats output_stats_;             // the output's last figures, once it is released
  std::vector<std::uint64_t> missing_by_input_;  // timeslices each input was missing from
  std::vector<std::string> lost_inputs_;
};

[[nodiscard]] runtime::AppType ts_builder_type();

}  // namespace daqflow::apps::timeslice
