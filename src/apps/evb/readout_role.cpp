#include "readout_role.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "apps/app_support.hpp"
#include "apps/fed/sources.hpp"
#include "daqflow/core/clock.hpp"

namespace daqflow::apps::evb {

runtime::HostNeeds readout_host_needs(const runtime::ApplicationConfig& app,
                                      const runtime::ClusterConfig& /*cluster*/) {
  runtime::HostNeeds needs;
  const auto size = app.params.value("chunk_size", std::uint64_t{0});
  const auto count = app.params.value("chunks", std::uint64_t{0});
  // Left to the store (0): what it picks unless a super-fragment needs larger chunks.
  if (size != 0 && count != 0) {
    needs.send_pool_bytes = size * count;
  } else if (count != 0) {
    needs.send_pool_bytes = count * kAutoChunkMin;
  } else {
    needs.send_pool_bytes = std::max<std::uint64_t>(kAutoStoreBytes, size);
  }
  return needs;
}

namespace {

// Per call of produce(): enough to amortise the loop, small enough to keep polling often.
constexpr std::uint32_t kProduceEvents = 256;
constexpr std::uint64_t kProduceBytes = 4u << 20;
constexpr std::size_t kEventCapacity = 1u << 16;

// The fragment source of the readout's `input`.
Result<std::unique_ptr<fed::FragmentSource>> make_source(runtime::AppContext& ctx,
                                                         std::uint32_t position,
                                                         const fed::FedSettings& fed,
                                                         const Topology& topology) {
  if (fed.input.kind == "network") {
    const runtime::ContextConfig* c = ctx.cluster().find_context(ctx.self().context);
    return fed::make_network_input(fed, position, c != nullptr ? c->host : "127.0.0.1",
                                   topology.numbering);
  }
  if (fed.input.kind == "plugin") {
    return fed::make_plugin_input(fed, position, ctx.self().id, topology.numbering,
                                  topology.resync_every);
  }
  return fed::make_emulator(fed, position, topology.numbering, topology.resync_every);
}

}  // namespace

ReadoutRole::~ReadoutRole() {
  release();
}

Result<void> ReadoutRole::configure(runtime::AppContext& ctx, const Topology& topology,
                                    std::uint32_t position, transport::Endpoint* endpoint,
                                    const ReadoutParams& params) {
  release();
  store_.reset();
  id_ = ctx.self().id;
  clock_ = &ctx.clock();
  topology_ = topology;
  endpoint_ = endpoint;
  failure_.reset();
  throttled_since_ = 0;
  throttled_ns_ = 0;
  blocks_out_ = bytes_out_ = 0;
  published_ = {};

  if (params.chunk_size % 64 != 0) {
    return runtime::param_error("chunk_size",
                                std::to_string(params.chunk_size) + " is not a multiple of 64");
  }
  auto source = make_source(ctx, position, params.fed, topology);
  if (!source) return source.error();
  source_ = std::move(*source);

  ReadoutSettings s;
  s.name = id_;
  s.ru = ctx.self().index;
  s.chunk_size = params.chunk_size;
  s.chunks = params.chunks;
  s.event_capacity = kEventCapacity;
  s.block_capacity = topology.ru_block_capacity;
  s.max_block_events = topology.max_block_events;
  s.max_message_size = ctx.cluster().transports.endpoint.max_message_size;
  s.endpoint = endpoint_;
  auto store = ReadoutStore::create(s, source_->max_super_fragment_size());
  if (!store) {
    source_->stop();
    return store.error();
  }
  store_ = std::move(*store);

  bus_.assign(topology.ids.size(), BuState{});
  for (const auto bu : topology.bus) bus_[bu].is_bu = true;

  add_metrics(ctx.metrics());
  return ok();
}

void ReadoutRole::add_metrics(runtime::MetricsRegistry& m) {
  events_produced_ = &m.counter("events_produced", "super-fragments written into chunks");
  bytes_produced_ = &m.counter("bytes_produced", "super-fragment bytes written into chunks",
                               runtime::Unit::bytes);
  blocks_cut_ = &m.counter("blocks_cut", "blocks of assigned events cut from the store");
  messages_out_ = &m.counter("messages_out", "blocks posted to BUs");
  bytes_out_metric_ = &m.counter("bytes_out", "block bytes posted to BUs", runtime::Unit::bytes);
  blocks_resent_ = &m.counter("blocks_resent", "blocks sent again after a BU was lost");
  throttled_metric_ = &m.counter("throttled_ns", "time production waited for free chunk memory",
                                 runtime::Unit::nanoseconds);
  fragment_errors_ = &m.counter("fragment_errors", "bad fragments seen by the input");
  events_held_ = &m.gauge("events_held", "events produced and not yet cut into a block");
  blocks_retained_ = &m.gauge("blocks_retained", "blocks kept until their BU acknowledges");
  const ReadoutStore* st = store_.get();
  m.probe(
      "chunks_retained", [st] { return static_cast<double>(st->chunks_shared()); },
      "chunks held by blocks not yet acknowledged");
}

// The store object stays until the next configure (or destruction): a peer's endpoint may hold
// our chunks until it is closed, after release().
void ReadoutRole::release() {
  message_.clear();
  if (source_) source_->stop();
  if (store_) store_->clear();
  source_.reset();
  endpoint_ = nullptr;
}

void ReadoutRole::set_failure(std::string what) {
  (void)failure_.set(std::move(what));
}

std::uint32_t ReadoutRole::produce(std::uint64_t limit, bool limit_throttles) {
  std::uint32_t n = 0;
  bool waiting = false;  // the last attempt waited for memory or for the builder
  const std::uint64_t before = store_->counters().bytes_produced;
  while (n < kProduceEvents && store_->counters().bytes_produced - before < kProduceBytes) {
    const ProduceStatus s = store_->produce(*source_, limit);
    if (s == ProduceStatus::produced) {
      ++n;
      continue;
    }
    const bool at_limit = s == ProduceStatus::not_ready && store_->produced() >= limit;
    waiting = s == ProduceStatus::no_chunk || s == ProduceStatus::ring_full ||
              (at_limit && limit_throttles);
    if (s == ProduceStatus::failed) set_failure("input: " + store_->error());
    break;
  }
  if (waiting && n == 0) {
    if (throttled_since_ == 0) throttled_since_ = clock_->now_ns();
  } else if (throttled_since_ != 0) {
    throttled_ns_ += static_cast<std::uint64_t>(clock_->now_ns() - throttled_since_);
    throttled_since_ = 0;
  }
  return n;
}

void ReadoutRole::on_assign(const wire::Assign& a) {
  if (a.bu >= bus_.size() || !bus_[a.bu].is_bu) {
    set_failure("assign of block " + std::to_string(a.block_id) + " names " + topology_.name(a.bu) +
                ", not a BU of this builder");
    return;
  }
  const AssignOutcome outcome = store_->assign(a);
  if (outcome == AssignOutcome::error) {
    set_failure(store_->error());
    return;
  }
  // The EVM assigns only to BUs it holds alive: one this RU saw go (its process ended) is back
  // (started again, and rejoined the EVM under a new epoch). What was parked for the old one
  // stays parked: the EVM re-assigned or holds it.
  if (outcome != AssignOutcome::stale && !bus_[a.bu].live) bu_back(a.bu);
}

void ReadoutRole::on_release(std::uint64_t below) {
  (void)store_->release_below(below);
}

void ReadoutRole::on_hold(const wire::Hold& h) {
  (void)store_->hold(h.block_id, h.action == wire::HoldAction::keep);
}

void ReadoutRole::bu_back(transport::AppIndex bu) {
  if (bu < bus_.size() && bus_[bu].is_bu) bus_[bu].live = true;
}

void ReadoutRole::on_send_done(transport::AppIndex peer) {
  if (peer < bus_.size() && bus_[peer].in_flight > 0) --bus_[peer].in_flight;
}

void ReadoutRole::bu_gone(transport::AppIndex bu) {
  if (bu >= bus_.size() || !bus_[bu].is_bu || !bus_[bu].live) return;
  bus_[bu].live = false;
  bus_[bu].in_flight = 0;
  store_->park(bu);
}

int ReadoutRole::send() {
  if (!store_->cut()) {
    set_failure(store_->error());
    return 0;
  }
  for (auto& b : bus_) b.blocked = false;
  int posted = 0;
  for (std::size_t i = 0; i < store_->ready_count();) {
    const ReadyBlock rb = store_->ready_at(i);
    BuState& bu = bus_[rb.bu];
    if (!bu.live) {
      store_->park(rb.bu);
      continue;
    }
    if (bu.blocked) {
      ++i;
      continue;
    }
    store_->stage(i, message_);
    const std::size_t size = message_.size();
    const transport::SendStatus s = endpoint_->post_send(rb.bu, message_);
    if (s == transport::SendStatus::ok) {
      store_->mark_sent(i);
      ++bu.in_flight;
      ++blocks_out_;
      bytes_out_ += size;
      ++posted;
      continue;
    }
    message_.clear();
    switch (s) {
      case transport::SendStatus::back_pressure:
      case transport::SendStatus::not_connected:
        bu.blocked = true;
        ++i;
        break;
      case transport::SendStatus::closed:
        bu_gone(rb.bu);
        break;
      default:
        set_failure("block " + std::to_string(rb.block_id) + " of " + std::to_string(size) +
                    " bytes to " + topology_.name(rb.bu) +
                    " refused: " + std::string(transport::to_string(s)));
        return posted;
    }
  }
  return posted;
}

std::string ReadoutRole::describe() const {
  if (!store_) return "no readout store";
  std::string text =
      fmt::format("{} blocks held ({} waiting for their events, {} ready to send, {} set aside)",
                  store_->blocks_held(), store_->blocks_waiting(), store_->ready_count(),
                  store_->blocks_aside());
  for (std::size_t bu = 0; bu < bus_.size(); ++bu) {
    if (!bus_[bu].is_bu || bus_[bu].in_flight == 0) continue;
    text += fmt::format("; in flight to '{}'{}: {}",
                        topology_.name(static_cast<transport::AppIndex>(bu)),
                        bus_[bu].live ? "" : " (gone)", bus_[bu].in_flight);
  }
  return text;
}

bool ReadoutRole::idle() const {
  if (!store_) return true;
  for (std::size_t i = 0; i < store_->ready_count(); ++i) {
    if (bus_[store_->ready_at(i).bu].live) return false;
  }
  for (const auto& b : bus_) {
    if (b.live && b.in_flight > 0) return false;
  }
  return true;
}

void ReadoutRole::publish() {
  if (!store_) return;
  const ReadoutCounters& c = store_->counters();
  auto delta = [](runtime::Counter* m, std::uint64_t now, std::uint64_t& last) {
    if (now > last) m->add_single_writer(now - last);
    last = now;
  };
  std::uint64_t throttled = throttled_ns_;
  if (throttled_since_ != 0)
    throttled += static_cast<std::uint64_t>(clock_->now_ns() - throttled_since_);
  delta(events_produced_, c.events_produced, published_.events);
  delta(bytes_produced_, c.bytes_produced, published_.bytes);
  delta(blocks_cut_, c.blocks_cut, published_.blocks_cut);
  delta(messages_out_, blocks_out_, published_.blocks_out);
  delta(bytes_out_metric_, bytes_out_, published_.bytes_out);
  delta(blocks_resent_, c.blocks_resent, published_.resent);
  delta(throttled_metric_, throttled, published_.throttled);
  delta(fragment_errors_, source_->stats().fragment_errors, published_.fragment_errors);
  events_held_->set(static_cast<double>(store_->produced() - store_->consumed()));
  blocks_retained_->set(static_cast<double>(store_->blocks_held()));
}

ReadoutRole::Figures ReadoutRole::figures() const {
  if (events_produced_ == nullptr) return {};
  return {events_produced_->value(), bytes_produced_->value(), blocks_cut_->value(),
          throttled_metric_->value()};
}

}  // namespace daqflow::apps::evb
