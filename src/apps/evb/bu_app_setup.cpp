// The BU's configuration (bu_app.hpp): the steps of setup() and its handlers.

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <thread>

#include "bu_app.hpp"
#include "daqflow/apps/output/frd.hpp"
#include "daqflow/apps/output/salvage.hpp"
#include "daqflow/wire/evb.hpp"

namespace daqflow::apps::evb {

namespace {

// The longest sleep while the output holds batches.
constexpr std::int64_t kOutputWaitNs = 100'000;

}  // namespace

Result<void> BuilderUnit::setup(runtime::AppContext& ctx, const BuSettings& s) {
  clock_ = &ctx.clock();
  events_per_request_ = s.events_per_request;
  window_ = s.blocks_in_flight;
  timeout_ms_ = s.timeout_ms;
  heartbeat_ns_ = s.heartbeat_ms * 1'000'000;
  evm_redial_ms_ = s.evm_redial_ms;
  fail_on_incomplete_ = s.on_incomplete == "fail";
  auto topology = resolve_topology(ctx);
  if (!topology) return topology.error();
  topology_ = std::move(*topology);
  const auto position = static_cast<std::size_t>(
      std::find(topology_.bus.begin(), topology_.bus.end(), ctx.self().index) -
      topology_.bus.begin());
  durable_ = topology_.bu_durable[position];

  BuilderSettings b;
  b.rus = topology_.rus;
  b.feds = topology_.ru_feds;
  for (const AppIndex ru : topology_.rus) b.ru_names.push_back(topology_.name(ru));
  // Room beyond the window: after a fence, parts of blocks taken from this BU may still come
  // (they are built, refused and dropped) while it gathers its new ones.
  b.slots = 2 * window_;
  b.max_block_events = topology_.max_block_events;
  b.timeout_ns = timeout_ms_ * 1'000'000;
  b.check_crc = s.check_crc;
  auto builder = BlockBuilder::create(std::move(b));
  if (!builder) return builder.error();
  builder_ = std::move(*builder);
  if (auto r = open_endpoint(ctx, s.output); !r) return r;
  add_metrics(ctx.metrics());
  reset_run();
  register_handlers(data_path());
  return ok();
}

Result<void> BuilderUnit::open_endpoint(runtime::AppContext& ctx, const nlohmann::json& output) {
  // Every received part is held until its block is written: the receive pool must cover the
  // window from every RU, or the last parts of a block could never arrive.
  transport::EndpointOptions options = ctx.endpoint_options();
  const auto nru = static_cast<std::uint32_t>(topology_.rus.size());
  options.recv_buffers = std::max(options.recv_buffers, window_ * nru + 2 * nru + 8);
  auto endpoint = ctx.endpoint(&options);
  if (!endpoint) return endpoint.error().context("endpoint");
  endpoint_ = *endpoint;

  output::OutputContext oc;
  oc.run_number = ctx.cluster().run.number;
  oc.bu_id = id();
  oc.default_dir = ctx.cluster().run.output;
  oc.queue_depth = window_;
  oc.restarted = ctx.restarted();
  if (auto r = output::farm_output_context(ctx.cluster(), output, endpoint_, oc); !r) {
    return runtime::param_error("output", r.error().message());
  }
  auto made = output::make_output(output, oc);
  if (!made) return made.error();
  output_ = std::move(*made);
  if (auto r = to_evm_.configure(id(), {topology_.evm}, 2 * std::size_t{window_} + 16); !r) {
    return r.error();
  }
  for (const auto ru : topology_.rus) {
    if (auto r = endpoint_->connect(ru); !r) {
      return r.error().context("connecting to '" + topology_.name(ru) + "'");
    }
  }
  return ok();
}

void BuilderUnit::add_metrics(runtime::MetricsRegistry& m) {
  events_built_ =
      &m.counter("events_built", "events built with every RU's data and granted for output");
  events_incomplete_ =
      &m.counter("events_incomplete", "events built without some RU's data and granted for output");
  events_corrupted_ = &m.counter("events_corrupted", "events with a fragment that failed a check");
  events_written_ = &m.counter("events_written", "events the output finished with");
  events_not_written_ = &m.counter(
      "events_not_written", "events built and granted but not written: the output's disk cap");
  events_dropped_ = &m.counter("events_dropped",
                               "incomplete events built and granted but not written: an FRD "
                               "output's incomplete: drop");
  events_fenced_ =
      &m.counter("events_fenced", "events built and dropped: the EVM had given them to another BU");
  grants_late_ =
      &m.counter("grants_late", "grants that came after their lease (discard output): asked again");
  bytes_built_ = &m.counter("bytes_built", "bytes of the events built", runtime::Unit::bytes);
  blocks_built_ = &m.counter("blocks_built", "blocks built");
  requests_sent_ = &m.counter("requests_sent", "blocks requested of the EVM");
  messages_in_ = &m.counter("messages_in", "block messages received");
  bytes_in_ = &m.counter("bytes_in", "block bytes received", runtime::Unit::bytes);
  parts_late_ = &m.counter("parts_late", "block parts arriving after their block was built");
  parts_duplicate_ = &m.counter("parts_duplicate", "block parts received twice");
  blocks_open_ = &m.gauge("blocks_open", "blocks being gathered or written");
}

void BuilderUnit::reset_run() {
  batches_ = std::vector<output::OutputBatch>(window_);
  acks_.assign(window_, AckInfo{});
  free_.clear();
  free_.reserve(window_);
  for (auto* list : {&unsubmitted_, &unacked_, &unasked_, &awaiting_, &reask_}) {
    list->clear();
    list->reserve(window_);
  }
  epoch_ = 0;
  for (auto& b : batches_) {
    b.events.reserve(topology_.max_block_events);
    b.pieces.reserve(builder_->max_pieces());
    b.buffers.reserve(builder_->max_buffers());
    free_.push_back(&b);
  }
  ru_lost_why_.assign(topology_.rus.size(), std::string());
  ru_down_.assign(topology_.rus.size(), false);
  ru_down_ns_.assign(topology_.rus.size(), 0);
  leave_pending_ = false;
  rejoin_pending_ = false;
  evm_down_ = false;
  reack_pending_ = false;
  recent_acks_.assign(2 * std::size_t{window_} + 16, AckInfo{});
  recent_next_ = reack_from_ = reack_to_ = 0;
  gone_.clear();
  gone_.reserve(topology_.rus.size());
  written_published_ = 0;
  not_written_published_ = 0;
  files_written_.clear();
  requested_ = 0;
  in_output_ = 0;
  heartbeat_seq_ = 0;
  next_heartbeat_ns_ = 0;
  next_output_check_ns_ = 0;
  warned_corrupt_ = false;
  warned_incomplete_ = false;
  first_build_ns_.store(0);
  last_build_ns_.store(0);
  assembly_.clear();
}

void BuilderUnit::register_handlers(runtime::DataPath& path) {
  // The output's own traffic (a farm output talks to its SFC) is its own.
  path.intercept([this](Completion& c) { return output_->on_message(c); });
  const auto from_evm = [this, &path](auto message, auto handle) {
    using Message = decltype(message);
    return decoded<Message>(path,
                            [this, handle](AppIndex peer, const Message& m, std::int64_t now) {
                              if (peer != topology_.evm) {
                                data_path().reject();
                                return;
                              }
                              (this->*handle)(m, now);
                            });
  };
  path.on(wire::MessageType::commit, from_evm(wire::Commit{}, &BuilderUnit::on_commit));
  path.on(wire::MessageType::fence, from_evm(wire::Fence{}, &BuilderUnit::on_fence));
  path.on(wire::MessageType::block, [this](Completion& c, std::int64_t now) { on_part(c, now); });
  path.on_peer_gone([this](AppIndex peer, std::string_view reason, bool rejected) {
    on_peer_gone(peer, reason, rejected);
  });
  path.on_work([this](std::int64_t now) { return work(now); });
  // Heartbeats go out on time; batches come back from the output without a message: the agent
  // does not sleep long while it holds some.
  path.at([this] { return next_heartbeat_ns_; });
  path.at([this] { return in_output_ > 0 ? clock_->now_ns() + kOutputWaitNs : 0; });
  path.drained_when([this] { return builder_->open() == 0 && in_output_ == 0 && to_evm_.idle(); },
                    [this] {
                      std::string text = fmt::format("{} blocks open", builder_->open());
                      if (builder_->open() > 0) text += " (" + builder_->describe_open() + ")";
                      return text +
                             fmt::format("; {} blocks in the output; {} messages to the EVM unsent",
                                         in_output_, to_evm_.held());
                    });
}

void BuilderUnit::fold_results(nlohmann::json& run, const std::string& id,
                               const nlohmann::json& app) {
  if (!run.is_object()) run = nlohmann::json::object();
  auto count = [](const nlohmann::json& j, const char* key) -> std::uint64_t {
    const auto it = j.find(key);
    return it != j.end() && it->is_number_unsigned() ? it->get<std::uint64_t>() : 0;
  };
  run["events_written"] = count(run, "events_written") + count(app, "events_written");
  // A lost BU's events that no finished file holds (its salvage's count) are not written either.
  run["events_not_written"] = count(run, "events_not_written") + count(app, "events_not_written") +
                              count(app, "events_lost_from_disk");
  if (const std::uint64_t dropped = count(app, "events_dropped"); dropped > 0) {
    run["events_dropped"] = count(run, "events_dropped") + dropped;
  }
  if (!run.contains("bus") || !run["bus"].is_object()) run["bus"] = nlohmann::json::object();
  run["bus"][id] = count(app, "events_built");
}

}  // namespace daqflow::apps::evb
