// The time-slice builder's configuration (ts_builder_app.hpp): the steps of setup().

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "daqflow/apps/output/salvage.hpp"
#include "daqflow/wire/endian.hpp"
#include "daqflow/wire/evb.hpp"
#include "daqflow/wire/farm.hpp"
#include "ts_batch.hpp"
#include "ts_builder_app.hpp"
#include "ts_input_app.hpp"

namespace daqflow::apps::timeslice {

namespace {

constexpr std::size_t kManagerMessageSize = 64;
// The ts_done messages kept for a link to the manager made again: at least this many, and at
// least the manager's builder_window (a failed link loses at most the ts_done messages of the
// timeslices granted here and still open).
constexpr std::size_t kRecentDone = 1024;
// Timeslices remembered as done here, for contributions sent again after a loss: those come
// within far fewer timeslices than this.
constexpr std::uint64_t kDoneBits = 1u << 20;

}  // namespace

Result<void> TsBuilder::setup(runtime::AppContext& ctx, const TsBuilderSettings& s) {
  clock_ = &ctx.clock();
  timeout_ns_ = s.timeout_ms * 1'000'000;
  redial_ns_ = s.redial_ms * 1'000'000;
  fail_incomplete_ = s.on_incomplete == "fail";
  verify_crc_ = s.verify_crc;
  report_ns_ = s.report_ms * 1'000'000;
  if (s.output.value("kind", std::string()) == "frd") {
    return runtime::param_error(
        "output", "kind frd holds CMS events, not timeslices (discard, file or farm)");
  }
  auto largest = take_peers(ctx, s);
  if (!largest) return largest.error();
  if (auto r = open_endpoint(ctx, s, *largest); !r) return r;
  if (auto r = open_output(ctx, s, *largest); !r) return r;
  if (auto r = reset_run(); !r) return r;
  add_metrics(ctx.metrics());
  add_handlers();
  return ok();
}

Result<std::uint64_t> TsBuilder::take_peers(runtime::AppContext& ctx, const TsBuilderSettings& s) {
  has_manager_ = !s.manager.empty();
  recent_done_size_ = kRecentDone;
  if (has_manager_) {
    auto m = ctx.index_of(s.manager);
    if (!m) return runtime::param_error("manager", m.error().message());
    manager_ = *m;
    const runtime::ApplicationConfig& manager = ctx.cluster().applications[manager_];
    if (manager.type != "ts_manager") {
      return runtime::param_error("manager", "'" + s.manager + "' is no ts_manager");
    }
    recent_done_size_ = std::max<std::size_t>(
        kRecentDone, manager.params.value("builder_window", std::uint32_t{4}));
  }
  auto inputs = ctx.indexes_of("inputs", s.inputs);
  if (!inputs) return inputs.error();
  inputs_ = *inputs;
  if (inputs_.empty()) return runtime::param_error("inputs", "a builder needs at least one input");
  if (inputs_.size() > 65535) return runtime::param_error("inputs", "more than 65535 inputs");
  ids_ = detail::application_ids(ctx.cluster());
  // Every input is a ts_input that sends here, and they share one geometry. Received buffers
  // held at once (here_): those of the timeslices being built here and of those in the output.
  // Every input keeps a window of timeslices (its in_flight) until they are acknowledged; round
  // robin spreads it over the input's builders, so a builder holds at most its share of every
  // window, twice over (the timeslices coming in while the oldest complete). A manager may send
  // a builder more (one taking over a lost builder's timeslices): the whole window. The receive
  // buffers must hold every contribution of the timeslices here, or an input's stream stalls
  // behind a full builder.
  std::uint64_t largest = 0;
  here_ = 0;
  for (std::size_t i = 0; i < inputs_.size(); ++i) {
    const auto& app = ctx.cluster().applications[inputs_[i]];
    const auto not_mine = [&] {
      return runtime::param_error(
          "inputs", "'" + s.inputs[i] + "' is no ts_input with '" + id() + "' in its builders");
    };
    if (app.type != "ts_input") return not_mine();
    auto in = TsInputSettings::spec().read(app.params);
    if (!in) return in.error().context(runtime::application_named(app.id));
    const auto me = std::find(in->builders.begin(), in->builders.end(), id());
    if (me == in->builders.end()) return not_mine();
    auto g = input_geometry(app.params, runtime::application_named(app.id));
    if (!g) return g.error();
    if (i == 0) {
      geometry_ = *g;
      // In the scheduled order this builder's acknowledgements keep the inputs' schedule: in the
      // slot input i sends here, this builder acknowledges to input i.
      schedule_ = {};
      if (in->order == "scheduled") {
        schedule_.builders = in->builders.size();
        schedule_.position = static_cast<std::size_t>(me - in->builders.begin());
        schedule_.slot_ns = std::llround(in->slot_us * 1000);
      }
    } else if (!(*g == geometry_)) {
      return runtime::param_error(
          "inputs", "'" + s.inputs[i] + "' has another timeslice geometry than '" + s.inputs[0] +
                        "' (microslice_us, timeslice_us, overlap_us)");
    }
    // A replaying input's microslices are as large as they were recorded, a plugin's as large
    // as it says: up to the transport's largest message.
    largest = in->input.kind == "generator"
                  ? std::max(largest, contribution_bytes(*g, in->microslice_size.max))
                  : UINT64_MAX;
    const std::uint64_t window =
        in_flight_of(*in, *g, ctx.cluster().transports.endpoint.pipeline_depth, app.transport);
    const std::uint64_t builders = in->builders.size();
    here_ = std::max(here_, has_manager_ ? window : 2 * ((window + builders - 1) / builders) + 2);
  }
  return largest;
}

Result<void> TsBuilder::open_endpoint(runtime::AppContext& ctx, const TsBuilderSettings& s,
                                      std::uint64_t largest) {
  transport::EndpointOptions options = ctx.endpoint_options();
  const std::uint64_t cluster_max = options.max_message_size;
  // A contribution, or a batch of small ones (ts_batch.hpp).
  std::uint64_t message =
      std::max<std::uint64_t>({largest, 4096, contribution_batch_bytes(cluster_max)});
  if (s.output.value("kind", std::string()) == "farm") {
    // It sends whole timeslices to the SFC: the endpoint's one size limit (which also sizes its
    // receive buffers) must hold one.
    message = std::max<std::uint64_t>(
        message, wire::kFarmEventSize + wire::kTimesliceDescriptorSize +
                     inputs_.size() * std::min<std::uint64_t>(largest, cluster_max));
  }
  options.max_message_size = static_cast<std::uint32_t>(std::min(cluster_max, message));
  options.recv_buffers = std::max<std::uint32_t>(
      options.recv_buffers,
      static_cast<std::uint32_t>(inputs_.size() * (here_ + kOutputDepth + 2)));
  recv_buffers_ = options.recv_buffers;
  auto endpoint = detail::open_endpoint(
      ctx, {{"manager", {&manager_, has_manager_ ? 1u : 0u}}, {"input", inputs_}}, &options);
  if (!endpoint) return endpoint.error();
  endpoint_ = *endpoint;
  // Reports and commit requests to the manager.
  auto control = data_path().send_pool(id() + ".control", kManagerMessageSize, 64);
  if (!control) return control.error();
  control_pool_ = *control;
  return ok();
}

Result<void> TsBuilder::open_output(runtime::AppContext& ctx, const TsBuilderSettings& s,
                                    std::uint64_t largest) {
  output::OutputContext oc;
  oc.run_number = ctx.cluster().run.number;
  oc.bu_id = id();
  oc.default_dir = ctx.cluster().run.output;
  oc.queue_depth = kOutputDepth;
  oc.content = output::FileContent::timeslices;
  // Started again in this run (restart: on-failure): its files go on after its earlier ones.
  oc.restarted = ctx.restarted();
  if (auto r = output::farm_output_context(ctx.cluster(), s.output, endpoint_, oc); !r) {
    return runtime::param_error("output", r.error().message());
  }
  // A timeslice is a descriptor and up to five pieces per input (on byte-stream transports one):
  // past what a message carries, the farm output copies it into one buffer.
  if (1 + 1 + 5 * inputs_.size() > transport::kMaxSegments) {
    oc.max_event_size =
        wire::kTimesliceDescriptorSize +
        inputs_.size() *
            std::min<std::uint64_t>(largest, ctx.cluster().transports.endpoint.max_message_size);
  }
  auto output = output::make_output(s.output, oc);
  if (!output) return output.error();
  output_ = std::move(*output);
  return ok();
}

Result<void> TsBuilder::reset_run() {
  batches_ = std::vector<output::OutputBatch>(kOutputDepth);
  written_ = std::vector<Written>(kOutputDepth);
  free_.clear();
  for (std::size_t i = 0; i < kOutputDepth; ++i) {
    batches_[i].events.reserve(1);
    batches_[i].pieces.reserve(1 + inputs_.size() * transport::kMaxSegments);
    batches_[i].buffers.reserve(inputs_.size() * transport::kMaxSegments);
    written_[i].from.assign(inputs_.size(), 0);
    free_.push_back(&batches_[i]);
  }
  in_output_ = 0;
  TsAssembly::Settings a;
  a.inputs = inputs_.size();
  a.slots = here_ + 2;
  a.timeout_ns = timeout_ns_;
  a.remembered = kDoneBits;
  assembly_ = TsAssembly(a);
  // An input keeps a timeslice until its acknowledgement comes and never sends it again unless
  // this builder is lost: an acknowledgement the transport cannot take now waits, in order. At
  // most the timeslices being built and written wait per input, and as many late ones. The
  // acknowledgements of one round to an input go as one message (14 of 16 bytes: a message the
  // shm transport carries in its ring).
  constexpr std::size_t kAcksPerMessage = 14;
  acks_ = std::vector<ControlLog>(inputs_.size());
  turns_ = Turns{};
  turns_.asked.assign(inputs_.size(), 0);
  input_down_ns_.assign(inputs_.size(), 0);
  any_input_down_ = false;
  end_vote_.reset(inputs_.size());
  end_decided_.reset();
  end_told_.assign(inputs_.size(), 0);
  end_all_told_ = false;
  // The ts_done messages that may have been on a failed link to the manager: at most its
  // builder_window of timeslices granted here are open at once.
  recent_done_.assign(recent_done_size_, wire::TsDone{});
  done_count_ = redo_from_ = redo_to_ = 0;
  manager_down_ns_ = 0;
  for (std::size_t i = 0; i < inputs_.size(); ++i) {
    if (auto r = acks_[i].configure(id() + ".acks" + std::to_string(i), {inputs_[i]},
                                    2 * (here_ + kOutputDepth + 4), kAcksPerMessage);
        !r) {
      return r;
    }
  }
  // The manager counts this builder's timeslices in flight by its ts_done messages: one it
  // cannot take now waits, in order.
  if (has_manager_) {
    if (auto r = to_manager_.configure(id() + ".done", {manager_}, 2 * kOutputDepth + 8); !r) {
      return r;
    }
  }
  gone_.clear();
  gone_.reserve(1);
  next_expire_ns_ = 0;
  next_report_ns_ = 0;
  epoch_ = 0;
  bytes_done_ = done_total_ = 0;
  over_cap_seen_ = 0;
  sampler_.reset(ThroughputSampler::kBuilderIntervalNs);
  files_written_.clear();
  const std::lock_guard lock(results_mutex_);
  output_stats_ = {};
  missing_by_input_.assign(inputs_.size(), 0);
  lost_inputs_.clear();
  return ok();
}

void TsBuilder::add_metrics(runtime::MetricsRegistry& m) {
  metrics_ = &m;
  contributions_ = &m.counter("contributions", "contributions received");
  timeslices_complete_ = &m.counter("timeslices_complete", "timeslices with every contribution");
  timeslices_incomplete_ =
      &m.counter("timeslices_incomplete", "timeslices written flagged: contributions missing");
  timeslices_written_ = &m.counter("timeslices_written", "timeslices the output has taken");
  timeslices_not_written_ = &m.counter("timeslices_not_written",
                                       "timeslices built but not written: the output's disk cap");
  contributions_late_ = &m.counter(
      "contributions_late", "contributions for a timeslice done before (dropped, acknowledged)");
  contributions_duplicate_ =
      &m.counter("contributions_duplicate", "a second contribution of one input (dropped)");
  contributions_rejected_ =
      &m.counter("contributions_rejected", "contributions that failed the checks (dropped)");
  messages_malformed_ = &m.counter("messages_malformed", "malformed messages dropped");
  contributions_fenced_ = &m.counter(
      "contributions_fenced", "contributions sent under another epoch of this builder (dropped)");
  commits_denied_ =
      &m.counter("commits_denied", "timeslices the manager did not let this builder write");
  fences_ = &m.counter("fences", "fences received: the manager had declared this builder lost");
  bytes_in_ = &m.counter("bytes_in", "contribution bytes received", runtime::Unit::bytes);
  turns_given_ = &m.counter("turns_given", "scheduled in turns: turns given to the inputs");
  turn_messages_ = &m.counter("turn_messages",
                              "scheduled in turns: the inputs' requests and hand-backs received");
  end_votes_ = &m.counter("end_votes",
                          "without a manager: halted inputs' counts of the timeslices they made");
  inputs_said_ended_ =
      &m.counter("inputs_said_ended",
                 "without a manager: halted inputs that said they ended (all acknowledged)");
  turns_taken_back_ = &m.counter(
      "turns_taken_back", "scheduled in turns: turns taken back from an input silent in them");
  timeslices_building_ = &m.gauge("timeslices_building", "timeslices waiting for contributions");
}

void TsBuilder::add_handlers() {
  runtime::DataPath& path = data_path();
  path.count_rejected_in(*messages_malformed_);
  // The farm output's messages (the SFC's credits) are its own.
  path.intercept([this](Completion& c) { return output_->on_message(c); });
  path.on(wire::MessageType::ts_turn, [this](Completion& c, std::int64_t now) {
    const auto it = std::find(inputs_.begin(), inputs_.end(), c.peer);
    if (it == inputs_.end() || !in_turns()) {
      data_path().reject();
      return;
    }
    heard_from(static_cast<std::size_t>(it - inputs_.begin()));
    on_turn(c, static_cast<std::size_t>(it - inputs_.begin()), now);
  });
  path.on(wire::MessageType::ts_contribution, [this](Completion& c, std::int64_t now) {
    const auto it = std::find(inputs_.begin(), inputs_.end(), c.peer);
    if (it == inputs_.end()) {
      data_path().reject();
      return;
    }
    const auto input = static_cast<std::size_t>(it - inputs_.begin());
    heard_from(input);
    if (in_turns()) {
      if (input == turns_.holder) turns_.active_ns = now;
      received_.push_back(Received{std::move(c), input, now});
      return;
    }
    on_contributions(c, input, now);
  });
  // Without a manager, a halted input says how many timeslices it made (ts_end_vote.hpp).
  path.on(wire::MessageType::ts_assign, [this](Completion& c, std::int64_t) {
    const auto it = std::find(inputs_.begin(), inputs_.end(), c.peer);
    if (it == inputs_.end() || has_manager_) {
      data_path().reject();
      return;
    }
    on_end_proposed(c, static_cast<std::size_t>(it - inputs_.begin()));
  });
  const auto from_manager = [this](Completion& c, std::int64_t) {
    if (!has_manager_ || c.peer != manager_) {
      data_path().reject();
      return;
    }
    on_manager(c);
  };
  path.on(wire::MessageType::ts_commit, from_manager);
  path.on(wire::MessageType::fence, from_manager);
  path.on_peer_gone(
      [this](AppIndex peer, std::string_view reason, bool) { on_peer_gone(peer, reason); });
  path.on_work([this](std::int64_t now) { return work(now); });
  path.drained_when(
      [this] { return assembly_.building() == 0 && in_output_ == 0 && control_idle(); });
}

}  // namespace daqflow::apps::timeslice
