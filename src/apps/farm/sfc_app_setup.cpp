// The SFC's configuration (sfc_app.hpp): the steps of setup().

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <bit>
#include <cmath>

#include "daqflow/apps/output/salvage.hpp"
#include "daqflow/wire/endian.hpp"
#include "daqflow/wire/evb.hpp"
#include "sfc_app.hpp"

namespace daqflow::apps::farm {

namespace {

constexpr std::size_t kBatchesPerStream = 4;
constexpr std::size_t kControlBufferSize = 64;
// Event numbers remembered for the duplicate check of events from BUs: a block built again after
// its BU was lost comes within far fewer events than this.
constexpr std::uint64_t kSeenEvents = 1u << 22;

}  // namespace

Result<void> SubFarmController::setup(runtime::AppContext& ctx, const SfcSettings& s) {
  clock_ = &ctx.clock();
  size_ = s.event_size.distribution();
  max_size_ = s.event_size.max;
  rate_hz_ = s.rate_hz;
  count_ = s.count;
  policy_ = *parse_policy(s.policy);  // one_of: known
  heartbeat_timeout_ns_ = s.heartbeat_timeout_ms * 1'000'000;
  input_window_ = s.input_window;
  if (max_size_ < size_.mean) return runtime::param_error("event_size", "max is below the mean");
  if (std::uint64_t{max_size_} + wire::kFarmEventSize >
      ctx.cluster().transports.endpoint.max_message_size) {
    return runtime::param_error("event_size", "max (" + std::to_string(max_size_) +
                                                  " bytes) exceeds transports.max_message_size");
  }
  for (const std::int64_t mask : s.stream_masks) {
    if (mask <= 0) return runtime::param_error("stream_masks", "a stream's mask must be above 0");
  }
  if (auto r = take_peers(ctx, s); !r) return r;
  if (auto r = open_endpoint(ctx, s); !r) return r;
  if (auto r = open_streams(ctx, s); !r) return r;
  add_metrics(ctx.metrics());
  reset_run(s.seed);
  add_handlers();
  return ok();
}

Result<void> SubFarmController::take_peers(runtime::AppContext& ctx, const SfcSettings& s) {
  auto workers = ctx.indexes_of("workers", s.workers);
  if (!workers) return workers.error();
  workers_ = *workers;
  auto inputs = ctx.indexes_of("inputs", s.inputs);
  if (!inputs) return inputs.error();
  inputs_ = *inputs;
  for (std::size_t i = 0; i < inputs_.size(); ++i) {
    const auto& app = ctx.cluster().applications[inputs_[i]];
    // Built events from BUs, or complete timeslices from time-slice builders.
    if ((app.type != "bu" && app.type != "ts_builder") ||
        app.params.value("output", nlohmann::json::object()).value("sfc", "") != id()) {
      return runtime::param_error(
          "inputs", "'" + s.inputs[i] +
                        "' is no BU or ts_builder with output {kind: farm, sfc: " + id() + "}");
    }
  }
  ids_ = detail::application_ids(ctx.cluster());

  DispatcherSettings d;
  d.workers = workers_;
  d.policy = policy_;
  d.window = s.window;
  d.busy_threshold = s.busy_threshold > 0 ? static_cast<std::uint32_t>(s.busy_threshold) : d.window;
  d.free_threshold =
      s.free_threshold >= 0 ? static_cast<std::uint32_t>(s.free_threshold) : d.busy_threshold - 1;
  d.queue = s.queue;
  d.heartbeat_timeout_ns = heartbeat_timeout_ns_;
  slots_ = std::size_t{d.queue} + workers_.size() * d.window;
  auto dispatcher = Dispatcher::create(std::move(d));
  if (!dispatcher) return dispatcher.error();
  dispatcher_ = std::make_unique<Dispatcher>(std::move(*dispatcher));
  return ok();
}

Result<void> SubFarmController::open_endpoint(runtime::AppContext& ctx, const SfcSettings& s) {
  transport::EndpointOptions options = ctx.endpoint_options();
  // Received buffers this SFC may hold at once: every input BU's window of events, the decisions
  // of every worker's window (twice: answers, late answers, tokens), and the accepted events in
  // the output batches (the input stops while those are full). Were the pool to run dry, the
  // transport would stop reading, and the workers' heartbeats with it.
  const std::size_t streams = s.stream_masks.empty() ? 1 : s.stream_masks.size() + 1;
  // Receive buffers are as large as the largest message (and filled in at Configure): with the
  // generator, the largest message this SFC receives is a worker's decision with its output.
  if (inputs_.empty()) {
    std::uint64_t largest = std::uint64_t{max_size_} + wire::kFarmEventSize;
    for (const AppIndex w : workers_) {
      const auto& params = ctx.cluster().applications[w].params;
      largest = std::max<std::uint64_t>(
          largest, wire::kDecisionSize + params.value("output_bytes", std::uint64_t{0}));
    }
    options.max_message_size = static_cast<std::uint32_t>(
        std::min<std::uint64_t>(options.max_message_size, std::max<std::uint64_t>(largest, 4096)));
  }
  options.recv_buffers = std::max<std::uint32_t>(
      options.recv_buffers,
      static_cast<std::uint32_t>(inputs_.size() * input_window_ +
                                 2 * workers_.size() * (s.window + 1) +
                                 streams * kBatchEvents * kBatchesPerStream + 32));
  auto endpoint = detail::open_endpoint(ctx, {{"worker", workers_}, {"input", inputs_}}, &options);
  if (!endpoint) return endpoint.error();
  endpoint_ = *endpoint;
  auto events =
      data_path().send_pool(id() + ".events", std::max<std::uint32_t>(max_size_, 8), slots_ + 16);
  if (!events) return events.error();
  events_pool_ = *events;
  {
    // Every event carries the same bytes but its first 8, its number.
    std::vector<core::Buffer> all;
    all.reserve(slots_ + 16);
    for (std::size_t i = 0; i < slots_ + 16; ++i) {
      all.push_back(events_pool_->acquire());
      for (std::uint32_t j = 0; j < max_size_; ++j) {
        all.back().data()[j] = static_cast<std::byte>((j * 37u + 11u) & 0xff);
      }
    }
  }
  auto control = data_path().send_pool(id() + ".control", kControlBufferSize,
                                       2 * slots_ + 4 * workers_.size() + 64);
  if (!control) return control.error();
  control_pool_ = *control;
  return ok();
}

Result<void> SubFarmController::open_streams(runtime::AppContext& ctx, const SfcSettings& s) {
  // Output streams: one for every accepted event, or one per mask and `unrouted`.
  const auto& masks = s.stream_masks;
  streams_ = std::vector<Stream>(masks.empty() ? 1 : masks.size() + 1);
  for (std::size_t i = 0; i < masks.size(); ++i) {
    streams_[i].name = "stream" + std::to_string(i);
    streams_[i].mask = static_cast<std::uint64_t>(masks[i]);
  }
  if (!masks.empty()) {
    streams_.back().name = "unrouted";
    streams_.back().unrouted = true;
  }
  for (Stream& st : streams_) {
    output::OutputContext oc;
    oc.run_number = ctx.cluster().run.number;
    oc.bu_id = st.name.empty() ? id() : id() + "_" + st.name;
    oc.default_dir = ctx.cluster().run.output;
    oc.queue_depth = kBatchesPerStream;
    oc.content = output::FileContent::farm_decisions;
    auto output = output::make_output(s.output, oc);
    if (!output) return output.error();
    st.output = std::move(*output);
    for (std::size_t i = 0; i < kBatchesPerStream; ++i) {
      output::OutputBatch& b = st.batches.emplace_back();
      b.events.reserve(kBatchEvents);
      b.pieces.reserve(kBatchEvents);
      b.buffers.reserve(kBatchEvents);
      st.free.push_back(&b);
    }
  }
  return ok();
}

void SubFarmController::add_metrics(runtime::MetricsRegistry& m) {
  metrics_ = &m;
  events_received_ = &m.counter("events_received", "events taken in (generated)");
  events_decided_ = &m.counter("events_decided", "events a worker decided on");
  events_accepted_ = &m.counter("events_accepted", "events accepted by a worker");
  events_pushed_ = &m.counter("events_pushed", "events pushed with no answer (push policy)");
  events_written_ = &m.counter("events_written", "accepted events written, per stream");
  events_not_written_ =
      &m.counter("events_not_written", "accepted events not written: an output's disk cap");
  events_redispatched_ =
      &m.counter("events_redispatched", "events dispatched again after their worker was lost");
  answers_late_ = &m.counter(
      "answers_late", "decisions dropped: from a lost worker, or for an event it no longer held");
  messages_malformed_ = &m.counter("messages_malformed", "malformed messages dropped");
  events_duplicate_ = &m.counter("events_duplicate",
                                 "events from BUs dropped as taken before (a block built again)");
  bytes_out_ = &m.counter("bytes_out", "event bytes sent to workers", runtime::Unit::bytes);
  events_outstanding_ = &m.gauge("events_outstanding", "events at workers, not decided");
  events_queued_ = &m.gauge("events_queued", "events waiting for a worker");
  workers_alive_ = &m.gauge("workers_alive", "workers not lost");
  workers_alive_->set(static_cast<double>(workers_.size()));
}

void SubFarmController::reset_run(std::uint64_t seed) {
  retained_ = Retention<Retained>(slots_);
  rng_ = core::Xoshiro(seed);
  pending_ = std::vector<Pending>(inputs_.size() * input_window_ + 16);
  pending_head_ = pending_count_ = 0;
  taken_.assign(inputs_.size(), 0);
  credit_due_.assign(inputs_.size(), false);
  seen_.reset(inputs_.empty() ? 64 : kSeenEvents);
  published_ = {};
  decided_by_ = std::make_unique<std::atomic<std::uint64_t>[]>(workers_.size());
  latency_.clear();
  sampler_.reset(ThroughputSampler::kBuilderIntervalNs);
  next_event_ = 0;
  tokens_ = 0;
  refilled_ns_ = 0;
  next_check_ns_ = 0;
  watching_ = false;
  bytes_decided_ = 0;
  lost_now_.clear();
  lost_now_.reserve(workers_.size());
  enabled_ns_.store(0);
  files_written_.clear();
  const std::lock_guard lock(lost_mutex_);
  lost_workers_.clear();
  rejoined_workers_.clear();
}

void SubFarmController::add_handlers() {
  runtime::DataPath& path = data_path();
  path.count_rejected_in(*messages_malformed_);
  // Every message here has a payload: one without is refused.
  const auto with_payload = [this](auto handle) {
    return [this, handle](Completion& c, std::int64_t now) {
      if (c.message.segment_count == 0) {
        data_path().reject();
        return;
      }
      handle(c, now);
    };
  };
  path.on(wire::MessageType::decision,
          with_payload([this](Completion& c, std::int64_t now) { on_decision(c, now); }));
  path.on(wire::MessageType::farm_event, with_payload([this](Completion& c, std::int64_t) {
            const auto it = std::find(inputs_.begin(), inputs_.end(), c.peer);
            if (it == inputs_.end()) {
              data_path().reject();
              return;
            }
            on_input(c, static_cast<std::size_t>(it - inputs_.begin()));
          }));
  path.on(wire::MessageType::heartbeat,
          with_payload([this](Completion& c, std::int64_t now) { on_heartbeat(c, now); }));
  path.on_peer_gone([this](AppIndex peer, std::string_view reason, bool) {
    if (dispatcher_->lose(peer)) {
      on_lost(peer, reason.empty() ? std::string("closed its connection")
                                   : "connection failed: " + std::string(reason));
    }
  });
  path.on_work([this](std::int64_t now) { return work(now); });
  path.drained_when([this] {
    if (!empty()) return false;
    if (const std::string broken = dispatcher_->check_invariant(); !broken.empty()) {
      fail("accounting broken at the end: " + broken);
    }
    return true;
  });
}

Result<void> SubFarmController::enable() {
  if (enabled_ns_.load() == 0) enabled_ns_.store(clock_->now_ns());
  return ok();
}

}  // namespace daqflow::apps::farm
