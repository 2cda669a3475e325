#include "ru_app.hpp"

#include <spdlog/spdlog.h>

#include "daqflow/wire/evb.hpp"

namespace daqflow::apps::evb {

using transport::Completion;

ReadoutUnit::~ReadoutUnit() {
  for (auto& c : completions_) c.message.clear();
}

Result<void> ReadoutUnit::configure(runtime::AppContext& ctx) {
  release();
  id_ = ctx.self().id;
  auto topology = resolve_topology(ctx);
  if (!topology) return topology.error();
  topology_ = std::move(*topology);
  const int position = topology_.ru_position(ctx.self().index);

  auto endpoint = ctx.endpoint(nullptr);
  if (!endpoint) return endpoint.error().context("application '" + id_ + "': endpoint");
  endpoint_ = *endpoint;
  if (auto r = role_.configure(ctx, topology_, static_cast<std::uint32_t>(position), endpoint_);
      !r) {
    return r;
  }
  for (const auto bu : topology_.bus) {
    if (auto r = endpoint_->connect(bu); !r) {
      return r.error().context("application '" + id_ + "': connecting to BU '" +
                               topology_.name(bu) + "'");
    }
  }
  producing_.store(false);
  halting_.store(false);
  failed_.store(false);
  idle_.store(true);
  events_.store(0);
  bytes_.store(0);
  blocks_.store(0);
  throttled_ns_.store(0);
  return ok();
}

Result<void> ReadoutUnit::enable() {
  producing_.store(true, std::memory_order_release);
  return ok();
}

Result<void> ReadoutUnit::suspend() {
  producing_.store(false, std::memory_order_release);
  return ok();
}

Result<void> ReadoutUnit::resume() {
  return enable();
}

void ReadoutUnit::begin_halt() {
  idle_.store(false, std::memory_order_release);  // until the agent has looked again
  halting_.store(true, std::memory_order_release);
  producing_.store(false, std::memory_order_release);
}

void ReadoutUnit::release() {
  producing_.store(false);
  for (auto& c : completions_) c.message.clear();
  role_.release();
  endpoint_ = nullptr;
}

void ReadoutUnit::fail_once(const std::string& reason) {
  if (!failed_.exchange(true)) fail(reason);
}

void ReadoutUnit::on_completion(Completion& c) {
  switch (c.kind) {
    case Completion::Kind::recv: {
      if (c.message.segment_count == 0) break;
      const auto payload = c.message.segments[0].bytes();
      if (c.message.type == wire::MessageType::assign && c.peer == topology_.evm) {
        wire::Assign a;
        if (const auto s = wire::decode(payload, a); s != wire::EvbStatus::ok) {
          fail_once("malformed assign from " + topology_.name(c.peer) + ": " +
                    std::string(wire::to_string(s)));
          break;
        }
        role_.on_assign(a);
      } else if (c.message.type == wire::MessageType::block_ack) {
        wire::BlockAck a;
        if (wire::decode(payload, a) == wire::EvbStatus::ok) role_.on_ack(a);
      }
      break;
    }
    case Completion::Kind::send_done:
      role_.on_send_done(c.peer);
      break;
    case Completion::Kind::peer_closed:
      role_.bu_gone(c.peer);  // the EVM closing in order is the end of the run
      break;
    case Completion::Kind::error:
      if (c.peer == topology_.evm) {
        if (!halting_.load(std::memory_order_acquire)) {
          fail_once("the EVM '" + topology_.name(c.peer) + "' is lost: " + std::string(c.reason));
        }
      } else {
        role_.bu_gone(c.peer);
      }
      break;
  }
  c.message.clear();
}

int ReadoutUnit::do_work() {
  if (endpoint_ == nullptr || failed_.load(std::memory_order_acquire)) return 0;
  const bool halting = halting_.load(std::memory_order_acquire);
  int work = 0;
  const std::size_t n = endpoint_->poll(completions_);
  for (std::size_t i = 0; i < n; ++i) on_completion(completions_[i]);
  work += static_cast<int>(n);
  // Ahead of the assigns while enabled; otherwise only what is already assigned must be made.
  const std::uint64_t limit =
      role_.assigned() +
      (producing_.load(std::memory_order_acquire) ? topology_.lookahead_events : 0);
  work += static_cast<int>(role_.produce(limit));
  work += role_.send();
  role_.publish();
  if (role_.failed()) fail_once("application '" + id_ + "': " + role_.failure());
  const ReadoutStore* store = role_.store();
  events_.store(store->counters().events_produced, std::memory_order_relaxed);
  bytes_.store(store->counters().bytes_produced, std::memory_order_relaxed);
  blocks_.store(store->counters().blocks_cut, std::memory_order_relaxed);
  throttled_ns_.store(role_.throttled_ns(), std::memory_order_relaxed);
  // Drained once every block is acknowledged, or (the EVM gone) nothing more can be posted; a
  // BU that hangs with our last messages unread does not hold up the halt.
  idle_.store(
      halting && store->blocks_waiting() == 0 && (store->blocks_held() == 0 || role_.idle()),
      std::memory_order_release);
  return work;
}

void ReadoutUnit::wait_for_work(std::chrono::microseconds timeout) {
  if (endpoint_ == nullptr) {
    Application::wait_for_work(timeout);
    return;
  }
  // While production waits for memory, only acks (messages) free it: block on the endpoint.
  endpoint_->wait(timeout);
}

bool ReadoutUnit::drained() const {
  return idle_.load(std::memory_order_acquire) || failed_.load(std::memory_order_acquire);
}

nlohmann::json ReadoutUnit::results() const {
  return {
      {"events_produced", events_.load(std::memory_order_relaxed)},
      {"bytes_produced", bytes_.load(std::memory_order_relaxed)},
      {"blocks_sent", blocks_.load(std::memory_order_relaxed)},
      {"throttled_ns", throttled_ns_.load(std::memory_order_relaxed)},
  };
}

runtime::AppType ru_type() {
  runtime::AppType t;
  t.name = "ru";
  t.help =
      "Event builder readout unit: emulates (or receives) its FEDs' fragments, builds one "
      "super-fragment per event and sends the blocks the EVM assigns to BUs.";
  t.params = ru_param_specs();
  t.enable_rank = 10;
  t.peer_params = {"evm"};
  t.make = [] { return std::make_unique<ReadoutUnit>(); };
  return t;
}

}  // namespace daqflow::apps::evb
