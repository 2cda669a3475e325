// The EVM's configuration (evm_app.hpp): the steps of setup() and its handlers.

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "daqflow/wire/evb.hpp"
#include "daqflow/wire/fed.hpp"
#include "evm_app.hpp"

namespace daqflow::apps::evb {

Result<void> EventManagerApp::setup(runtime::AppContext& ctx, const EvmSettings& s) {
  clock_ = &ctx.clock();
  rate_hz_ = s.trigger_rate_hz;
  token_ns_ = rate_hz_ > 0 ? static_cast<std::int64_t>(1e9 / rate_hz_) + 1 : 0;
  heartbeat_timeout_ns_ = s.heartbeat_timeout_ms * 1'000'000;
  lumi_ns_ = std::llround(s.lumi_section_s * 1e9);
  lumi_events_ = s.lumi_section_events;
  auto topology = resolve_topology(ctx);
  if (!topology) return topology.error();
  topology_ = std::move(*topology);

  EventManagerSettings e;
  e.bus = topology_.bus;
  e.windows = topology_.bu_windows;
  e.durable = topology_.bu_durable;
  e.heartbeat_timeout_ns = heartbeat_timeout_ns_;
  e.block_capacity = topology_.evm_block_capacity;
  e.max_block_events = topology_.max_block_events;
  auto evm = EventManager::create(std::move(e));
  if (!evm) return evm.error();
  evm_ = std::make_unique<EventManager>(std::move(*evm));

  auto endpoint = ctx.endpoint(nullptr);
  if (!endpoint) return endpoint.error().context("endpoint");
  endpoint_ = *endpoint;
  if (auto r = role_.configure(ctx, topology_, 0, endpoint_, s.readout); !r) return r;
  if (auto r = connect_peers(); !r) return r;
  add_metrics(ctx.metrics());
  reset_run();
  register_handlers(data_path());
  return ok();
}

Result<void> EventManagerApp::connect_peers() {
  // Every RU but this one receives the assigns; capacity: one per block of the table, twice.
  const std::vector<AppIndex> others(topology_.rus.begin() + 1, topology_.rus.end());
  if (auto r = assigns_.configure(id() + ".assigns", others, 2 * topology_.evm_block_capacity);
      !r) {
    return r.error();
  }
  // Commit answers and fences to the BUs: at most a window of commits each, and a fence.
  std::size_t windows = 0;
  for (const auto w : topology_.bu_windows) windows += w;
  if (auto r = replies_.configure(id() + ".replies", topology_.bus,
                                  2 * windows + 2 * topology_.bus.size() + 16);
      !r) {
    return r.error();
  }
  for (const auto peer : others) {
    if (auto r = endpoint_->connect(peer); !r) {
      return r.error().context("connecting to RU '" + topology_.name(peer) + "'");
    }
  }
  for (const auto peer : topology_.bus) {
    if (auto r = endpoint_->connect(peer); !r) {
      return r.error().context("connecting to BU '" + topology_.name(peer) + "'");
    }
  }
  return ok();
}

void EventManagerApp::add_metrics(runtime::MetricsRegistry& m) {
  events_triggered_ =
      &m.counter("events_triggered", "events triggered (written by the EVM's FEDs)");
  events_assigned_ = &m.counter("events_assigned", "events assigned to BUs");
  events_built_ = &m.counter("events_built", "events acknowledged built by a BU");
  events_incomplete_ = &m.counter("events_incomplete", "events built without some RU's data");
  events_reassigned_ = &m.counter("events_reassigned", "events re-assigned after a BU was lost");
  blocks_assigned_ = &m.counter("blocks_assigned", "blocks assigned to BUs");
  bytes_built_ = &m.counter("bytes_built", "bytes of the events built", runtime::Unit::bytes);
  events_in_flight_ = &m.gauge("events_in_flight", "events triggered, not yet built or incomplete");
  events_lost_ = &m.gauge("events_lost", "events that can no longer be built (no BU left)");
  events_in_doubt_ = &m.gauge("events_in_doubt",
                              "events granted to a lost BU with a file output, not acknowledged");
  commits_fenced_ = &m.counter("commits_fenced", "commit requests refused: the BU was lost");
  bus_alive_ = &m.gauge("bus_alive", "BUs not lost");
  bus_alive_->set(static_cast<double>(topology_.bus.size()));
}

void EventManagerApp::reset_run() {
  sequence_.reset();
  ids_seen_ = last_id_ = 0;
  last_lumi_ = 0;
  gone_.clear();
  gone_.reserve(topology_.ids.size());
  published_ = {};
  sampler_.reset(ThroughputSampler::kBuilderIntervalNs);
  watching_ = false;
  tokens_ = 0;
  refilled_ns_ = 0;
  next_check_ns_ = 0;
  released_ = 0;
  enabled_ns_.store(0);
  last_built_ns_.store(0);
  {
    const std::lock_guard lock(lost_mutex_);
    lost_bus_.clear();
    rejoined_bus_.clear();
  }
  const std::lock_guard doubt(doubt_mutex_);
  doubt_.clear();
  resolutions_.clear();
}

void EventManagerApp::register_handlers(runtime::DataPath& path) {
  const auto from_bu = [this, &path](auto message, auto handle) {
    using Message = decltype(message);
    return decoded<Message>(
        path, [this, handle](AppIndex peer, const Message& m, std::int64_t now) {
          if (std::find(topology_.bus.begin(), topology_.bus.end(), peer) == topology_.bus.end()) {
            data_path().reject();
            return;
          }
          (this->*handle)(peer, m, now);
        });
  };
  path.on(wire::MessageType::event_request,
          from_bu(wire::EventRequest{}, &EventManagerApp::on_request));
  path.on(wire::MessageType::commit_request,
          from_bu(wire::BlockAck{}, &EventManagerApp::on_commit_request));
  path.on(wire::MessageType::block_ack, from_bu(wire::BlockAck{}, &EventManagerApp::on_ack));
  path.on(wire::MessageType::leave, from_bu(wire::Fence{}, &EventManagerApp::on_leave));
  path.on(wire::MessageType::rejoin, from_bu(wire::Fence{}, &EventManagerApp::on_rejoin));
  path.on(wire::MessageType::heartbeat, from_bu(wire::Heartbeat{}, &EventManagerApp::on_heartbeat));
  path.on_sent([this](const Completion& c) { role_.on_send_done(c.peer); });
  path.on_peer_gone([this](AppIndex peer, std::string_view reason, bool) {
    const std::string why = reason.empty() ? std::string("closed its connection")
                                           : "connection failed: " + std::string(reason);
    if (std::find(topology_.bus.begin(), topology_.bus.end(), peer) != topology_.bus.end()) {
      lose_bu(peer, why);
    } else if (topology_.ru_position(peer) > 0) {
      assigns_.drop(peer);
      spdlog::warn("{}: RU '{}' {}; BUs will flag its events incomplete", id(),
                   topology_.name(peer), why);
    }
  });
  path.on_work([this](std::int64_t now) { return work(now); });
  // Heartbeats are checked, and a rate-limited trigger takes its next token, on time.
  path.at([this] { return watching_ ? next_check_ns_ : 0; });
  path.at([this] { return rate_hz_ > 0 && producing() ? refilled_ns_ + token_ns_ : 0; });
  // Every triggered event built and its blocks acknowledged here too; sends still queued for a
  // BU that hangs do not hold up the halt. Blocks in doubt (their BU lost with them granted)
  // are all that may be left.
  path.drained_when(
      [this] {
        const ReadoutStore* store = role_.store();
        return evm_->in_flight() == evm_->in_doubt() && assigns_.idle() &&
               store->blocks_held() == store->blocks_aside();
      },
      [this] { return describe_in_flight(); });
}

std::string EventManagerApp::describe_in_flight() const {
  std::string open;
  for (const AppIndex bu : topology_.bus) {
    if (const std::uint32_t n = evm_->open_blocks_of(bu); n > 0) {
      open += fmt::format("{}{} at '{}'", open.empty() ? "" : ", ", n, topology_.name(bu));
    }
  }
  return fmt::format(
      "{} events in flight ({} in doubt, {} not assigned); blocks open: {}; {} messages to the "
      "RUs unsent; readout: {}",
      evm_->in_flight(), evm_->in_doubt(),
      evm_->triggered() - std::min(evm_->triggered(), evm_->assigned()),
      open.empty() ? "none" : open, assigns_.held(), role_.describe());
}

}  // namespace daqflow::apps::evb
