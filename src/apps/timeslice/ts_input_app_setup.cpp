// The time-slice input's configuration (ts_input_app.hpp): the steps of setup().

#include <spdlog/spdlog.h>
#include <sys/prctl.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "daqflow/core/synced_clock.hpp"
#include "daqflow/wire/crc32c.hpp"
#include "daqflow/wire/endian.hpp"
#include "ts_batch.hpp"
#include "ts_input_app.hpp"
#include "ts_window.hpp"

namespace daqflow::apps::timeslice {

std::uint64_t contribution_bytes(const Geometry& g, std::uint64_t microslice_bytes) {
  return wire::kContributionSize +
         (std::uint64_t{g.core} + g.overlap) * (wire::kMicrosliceDescriptorSize + microslice_bytes);
}

std::uint32_t in_flight_of(const TsInputSettings& s, const Geometry& g, std::uint32_t depth,
                           std::string_view transport) {
  if (s.in_flight > 0) return s.in_flight;
  // A generator's contributions are at most this large; a replayed or a plugin's are not known
  // before the run.
  const std::uint64_t contribution =
      s.input.kind == "generator" ? contribution_bytes(g, s.microslice_size.max) : 0;
  return automatic_in_flight(s.order == "scheduled", s.builders.size(), depth, contribution,
                             link_of(transport));
}

Result<void> TsInput::setup(runtime::AppContext& ctx, const TsInputSettings& s) {
  clock_ = &ctx.clock();
  // microslice_us, timeslice_us and overlap_us are checked together, as the builders check every
  // input's.
  auto geometry = input_geometry(ctx.params(), "");
  if (!geometry) return geometry.error();
  geometry_ = *geometry;
  order_ = s.order == "scheduled" ? SendOrder::scheduled : SendOrder::chaotic;
  slot_ns_ = static_cast<std::int64_t>(std::llround(s.slot_us * 1000));
  redial_ns_ = s.redial_ms * 1'000'000;
  end_wait_ns_ = s.end_wait_ms * 1'000'000;
  size_ = s.microslice_size.distribution();
  max_size_ = s.microslice_size.max;
  sys_id_ = static_cast<std::uint8_t>(s.sys_id);
  sys_ver_ = static_cast<std::uint8_t>(s.sys_ver);
  crc_ = s.crc;
  real_time_ = s.pace == "real_time";
  count_ = s.count;
  if (max_size_ < size_.mean)
    return runtime::param_error("microslice_size", "max is below the mean");
  auto spare = take_peers(ctx, s);
  if (!spare) return spare.error();
  if (auto r = open_replay(s); !r) return r;
  if (auto r = open_plugin(s); !r) return r;
  if (auto r = open_endpoint(ctx, in_flight_ + 2 + *spare); !r) return r;
  add_metrics(ctx.metrics());
  reset_run(s.seed);
  add_handlers();
  return ok();
}

Result<std::uint32_t> TsInput::take_peers(runtime::AppContext& ctx, const TsInputSettings& s) {
  has_manager_ = !s.manager.empty();
  std::uint32_t spare = 0;
  manager_window_ = 0;
  if (has_manager_) {
    auto m = ctx.index_of(s.manager);
    if (!m) return runtime::param_error("manager", m.error().message());
    manager_ = *m;
    const auto& app = ctx.cluster().applications[manager_];
    if (app.type != "ts_manager") {
      return runtime::param_error("manager", "'" + s.manager + "' is no ts_manager");
    }
    manager_window_ = app.params.value("window", std::uint64_t{64});
    // The group is the manager's: one place in the configuration for every input.
    listener_.reset();
    const mcast::Group group =
        mcast::group_of(app.params.value("multicast", nlohmann::json::object()));
    if (!group.address.empty()) {
      auto listener =
          AssignListener::open(group, s.multicast_drop, ctx.self().index + std::uint64_t{1});
      if (!listener) return listener.error().context("the manager's multicast group");
      listener_.emplace(std::move(*listener));
    }
    // Timeslices a frozen builder was allowed to write stay here until it wakes or is
    // salvaged: room for as many as it may hold (two intervals each), so the rest go on.
    spare = 2 * app.params.value("builder_window", std::uint32_t{4});
  }
  auto indexes = ctx.indexes_of("builders", s.builders);
  if (!indexes) return indexes.error();
  builders_ = *indexes;
  ids_ = detail::application_ids(ctx.cluster());
  // The inputs of this input's builders, in configuration order: this input's position among
  // them is its place in the barrel shifter. Every builder lists the same inputs (checked by the
  // builders).
  const auto& first = ctx.cluster().applications[builders_.front()];
  const auto inputs = first.params.value("inputs", std::vector<std::string>{});
  const auto me = std::find(inputs.begin(), inputs.end(), id());
  if (me == inputs.end()) {
    return runtime::param_error(
        "builders", "builder '" + first.id + "' does not list '" + id() + "' among its inputs");
  }
  position_ = static_cast<std::size_t>(me - inputs.begin());
  eq_id_ =
      static_cast<std::uint16_t>(s.eq_id >= 0 ? s.eq_id : static_cast<std::int64_t>(position_));
  in_flight_ = in_flight_of(s, geometry_, ctx.cluster().transports.endpoint.pipeline_depth,
                            ctx.self().transport);
  return spare;
}

Result<void> TsInput::open_replay(const TsInputSettings& s) {
  replay_.reset();
  if (s.input.kind != "replay") return ok();
  if (s.input.path.empty()) return runtime::param_error("input.path", "must be set for a replay");
  auto recorded = MicrosliceReplay::open(s.input.path, eq_id_, geometry_);
  if (!recorded) return runtime::param_error("input.path", recorded.error().message());
  // The last recorded interval is the overlap of the one before: one timeslice fewer.
  if (recorded->intervals() < 2) {
    return runtime::param_error("input.path",
                                s.input.path + ": " + std::to_string(recorded->intervals()) +
                                    " timeslice(s) recorded; a replay needs at least two");
  }
  const std::uint64_t timeslices = recorded->intervals() - 1;
  count_ = count_ == 0 ? timeslices : std::min(count_, timeslices);
  max_size_ = recorded->largest_microslice();
  replay_ = std::make_unique<MicrosliceReplay>(std::move(*recorded));
  return ok();
}

Result<void> TsInput::open_plugin(const TsInputSettings& s) {
  plugin_.reset();
  if (s.input.kind != "plugin") return ok();
  fed::ReadoutPlugin::Setup setup;
  setup.app = id();
  setup.library = s.input.library;
  setup.config = s.input.config;
  setup.what = DAQFLOW_READOUT_MICROSLICES;
  setup.source_ids = {eq_id_};
  setup.microslice_ns = geometry_.microslice_ns;
  setup.microslices_per_interval = geometry_.core;
  auto plugin = fed::ReadoutPlugin::load(setup);
  if (!plugin) return plugin.error();
  const std::uint64_t largest = (*plugin)->info().max_event_bytes;
  if (largest < 8 || largest > UINT32_MAX) {
    return Error(ErrorCode::invalid_argument, (*plugin)->name() + ": init gave max_event_bytes " +
                                                  std::to_string(largest) +
                                                  " (a microslice's content: 8 bytes to 4 GiB)");
  }
  max_size_ = static_cast<std::uint32_t>(largest);
  plugin_slices_.assign(geometry_.core, daqflow_readout_microslice{});
  plugin_ = std::move(*plugin);
  return ok();
}

Result<void> TsInput::open_endpoint(runtime::AppContext& ctx, std::uint32_t intervals) {
  // A contribution: the header, (core + overlap) descriptors and at most as many largest
  // microslices.
  const std::uint64_t slices = std::uint64_t{geometry_.core} + geometry_.overlap;
  const std::uint64_t largest = contribution_bytes(geometry_, max_size_);
  const transport::EndpointOptions& t = ctx.cluster().transports.endpoint;
  if (largest > t.max_message_size) {
    return runtime::param_error(
        "microslice_size", "a timeslice of " + std::to_string(slices) + " microslices of up to " +
                               std::to_string(max_size_) + " bytes (" + std::to_string(largest) +
                               " bytes with descriptors) exceeds transports.max_message_size (" +
                               std::to_string(t.max_message_size) + ")");
  }
  transport::EndpointOptions options = ctx.endpoint_options();
  // Small contributions go several to a message when the typical one is small (the mean
  // generated; the largest recorded or from a plugin).
  const std::uint64_t mean =
      replay_ || plugin_
          ? largest
          : contribution_bytes(geometry_, static_cast<std::uint64_t>(std::llround(size_.mean)));
  batch_bytes_ = contribution_batch_bytes(t.max_message_size);
  if (!batched(mean, batch_bytes_)) batch_bytes_ = 0;
  // Messages as large as a contribution or a batch; received are acknowledgements only, each
  // dropped at once, so few receive buffers (they are as large as the largest message).
  options.max_message_size =
      static_cast<std::uint32_t>(std::max<std::uint64_t>({largest, 4096, batch_bytes_}));
  options.recv_buffers = 8;
  if (order_ == SendOrder::scheduled) {
    // A slot sends to one builder only: that link may hold what the chaotic order spreads over
    // every builder's, so that the input keeps as many contributions in flight either way.
    options.pipeline_depth = std::max<std::uint32_t>(
        options.pipeline_depth *
            static_cast<std::uint32_t>(std::max<std::size_t>(builders_.size(), 1)),
        in_flight_);
  }
  auto endpoint = detail::open_endpoint(
      ctx, {{"manager", {&manager_, has_manager_ ? 1u : 0u}}, {"builder", builders_}}, &options);
  if (!endpoint) return endpoint.error();
  endpoint_ = *endpoint;
  const std::uint64_t interval_bytes =
      replay_ ? replay_->largest_interval_bytes()
              : std::uint64_t{geometry_.core} * (wire::kMicrosliceDescriptorSize + max_size_);
  // Small intervals are made several to a round (up to 256 kB and 64 intervals, as many as the
  // pool has free), so that each builder's contributions of a round leave in one write: with
  // 64 kB rounds, 4 kB contributions went about two to a system call over tcp.
  constexpr std::uint64_t kRoundBytes = 256 * 1024;
  intervals_per_round_ = static_cast<int>(
      std::clamp<std::uint64_t>(kRoundBytes / std::max<std::uint64_t>(interval_bytes, 1), 4, 64));
  auto data = data_path().send_pool(id() + ".microslices", interval_bytes, intervals);
  if (!data) return data.error();
  data_pool_ = *data;
  {
    // Contents are a fixed pattern but for their first 8 bytes (the microslice's start time):
    // written once here, not per microslice.
    std::vector<core::Buffer> all;
    for (std::uint32_t i = 0; i < intervals; ++i) {
      all.push_back(data_pool_->acquire());
      for (std::uint64_t j = 0; j < interval_bytes; ++j) {
        all.back().data()[j] = static_cast<std::byte>((j * 131u + eq_id_ * 7u + 3u) & 0xff);
      }
    }
  }
  auto headers = data_path().send_pool(id() + ".headers", wire::kContributionSize,
                                       2 * std::size_t{intervals} + 16);
  if (!headers) return headers.error();
  header_pool_ = *headers;
  batches_.clear();
  batches_.resize(builders_.size());
  batch_pool_ = nullptr;
  if (batch_bytes_ > 0) {
    // A batch stays lent until every timeslice it has a part of is built: twice the window's
    // bytes in batches, at least two a builder (when they run out, contributions go alone).
    const std::uint64_t window = 2 * std::uint64_t{intervals} * mean / batch_bytes_;
    const auto n = static_cast<std::uint32_t>(std::clamp<std::uint64_t>(
        window + 2 * builders_.size(), 2 * builders_.size(), intervals + 2 * builders_.size()));
    auto batches = data_path().send_pool(id() + ".batches", batch_bytes_, n);
    if (!batches) return batches.error();
    batch_pool_ = *batches;
    for (Batch& b : batches_) b.items.reserve(batch_bytes_ / mean + 1);
  }
  retained_cap_ = intervals - 1;
  return ok();
}

void TsInput::add_metrics(runtime::MetricsRegistry& m) {
  metrics_ = &m;
  microslices_ = &m.counter("microslices", "microslices produced");
  timeslices_sent_ = &m.counter("timeslices_sent", "contributions sent (first time)");
  timeslices_acked_ = &m.counter("timeslices_acked", "timeslices acknowledged by their builder");
  contributions_resent_ =
      &m.counter("contributions_resent", "contributions sent again after their builder was lost");
  bytes_sent_ = &m.counter("bytes_sent", "contribution bytes sent", runtime::Unit::bytes);
  slots_late_ = &m.counter("slots_late",
                           "scheduled: contributions sent after their slot (the input woke late)");
  slots_missed_ = &m.counter("slots_missed", "scheduled: slots slept through by more than a turn");
  slots_empty_ = &m.counter("slots_empty", "scheduled: slots with nothing ready for their builder");
  slots_blocked_ = &m.counter("slots_blocked", "scheduled: slots whose builder pushed back");
  turns_taken_ = &m.counter("turns_taken", "scheduled in turns: turns builders gave this input");
  intervals_late_ = &m.counter("intervals_late",
                               "real time: intervals produced late (every buffer awaited an ack)");
  messages_malformed_ = &m.counter("messages_malformed", "malformed messages dropped");
  after_end_ = &m.counter("timeslices_after_end",
                          "timeslices made past the run's end (the manager's), dropped unsent");
  timeslices_retained_ = &m.gauge("timeslices_retained", "timeslices kept until acknowledged");
}

void TsInput::reset_run(std::uint64_t seed) {
  TsOutbox::Settings o;
  o.builders = builders_.size();
  o.managed = has_manager_;
  o.capacity = retained_cap_;
  o.ahead = 2 * manager_window_ + in_flight_ + 16;
  outbox_ = TsOutbox(o);
  previous_ = TsInterval{};
  intervals_ = 0;
  stream_offset_ = 0;
  rng_ = core::Xoshiro(seed + position_);
  start_ns_ = 0;
  starved_ = false;
  turns_.assign(builders_.size(), Turn{});
  builder_down_ns_.assign(builders_.size(), 0);
  any_builder_down_ = false;
  manager_down_ns_ = 0;
  last_slot_ = -1;
  bytes_sent_total_ = acked_total_ = 0;
  echo_end_ = false;
  end_said_.assign(builders_.size(), 0);
  end_since_ns_ = 0;
  sampler_.reset(ThroughputSampler::kBuilderIntervalNs);
  const std::lock_guard lock(lost_mutex_);
  lost_builders_.clear();
  sent_again_.clear();
  listener_stats_ = {};
}

void TsInput::add_handlers() {
  runtime::DataPath& path = data_path();
  path.count_rejected_in(*messages_malformed_);
  path.on(wire::MessageType::ts_assign, [this](Completion& c, std::int64_t) {
    if (has_manager_ && c.peer == manager_) {
      on_assign(c);
    } else if (!has_manager_ &&
               std::find(builders_.begin(), builders_.end(), c.peer) != builders_.end()) {
      on_agreed_end(c);  // a builder's answer to the inputs' vote on the run's end
    } else {
      data_path().reject();
    }
  });
  path.on(wire::MessageType::ts_ack, [this](Completion& c, std::int64_t) { on_ack(c); });
  path.on(wire::MessageType::ts_turn, [this](Completion& c, std::int64_t) { on_turn(c); });
  path.on_peer_gone(
      [this](AppIndex peer, std::string_view reason, bool) { on_peer_gone(peer, reason); });
  path.on_work([this](std::int64_t now) { return work(now); });
  path.drained_when([this] { return outbox_.empty() && end_settled() && ended_told(); });
}

}  // namespace daqflow::apps::timeslice
