#include "ru_app.hpp"

#include <spdlog/spdlog.h>

#include "daqflow/wire/evb.hpp"

namespace daqflow::apps::evb {

using transport::Completion;

ReadoutUnit::~ReadoutUnit() {
  for (auto& c : completions_) c.message.clear();
}

Result<void> ReadoutUnit::configure(runtime::AppContext& ctx) {
  auto topology = resolve_topology(ctx);
  if (!topology) return topology.error();
  topology_ = std::move(*topology);
  const int position = topology_.ru_position(ctx.self().index);

  auto endpoint = ctx.endpoint(nullptr);
  if (!endpoint) return endpoint.error().context("endpoint");
  endpoint_ = *endpoint;
  if (auto r = role_.configure(ctx, topology_, static_cast<std::uint32_t>(position), endpoint_);
      !r) {
    return r;
  }
  for (const auto bu : topology_.bus) {
    if (auto r = endpoint_->connect(bu); !r) {
      return r.error().context("connecting to BU '" + topology_.name(bu) + "'");
    }
  }
  idle_.store(false);
  return ok();
}

void ReadoutUnit::release() {
  for (auto& c : completions_) c.message.clear();
  role_.release();
  endpoint_ = nullptr;
}

void ReadoutUnit::on_completion(Completion& c) {
  switch (c.kind) {
    case Completion::Kind::recv: {
      if (c.message.segment_count == 0) break;
      const auto payload = c.message.segments[0].bytes();
      if (c.message.type == wire::MessageType::assign && c.peer == topology_.evm) {
        wire::Assign a;
        if (const auto s = wire::decode(payload, a); s != wire::EvbStatus::ok) {
          fail("malformed assign from " + topology_.name(c.peer) + ": " +
               std::string(wire::to_string(s)));
          break;
        }
        role_.on_assign(a);
      } else if (c.message.type == wire::MessageType::release && c.peer == topology_.evm) {
        wire::Release r;
        if (const auto s = wire::decode(payload, r); s != wire::EvbStatus::ok) {
          fail("malformed release from " + topology_.name(c.peer) + ": " +
               std::string(wire::to_string(s)));
          break;
        }
        role_.on_release(r.below);
      } else if (c.message.type == wire::MessageType::hold && c.peer == topology_.evm) {
        wire::Hold h;
        if (const auto s = wire::decode(payload, h); s != wire::EvbStatus::ok) {
          fail("malformed hold from " + topology_.name(c.peer) + ": " +
               std::string(wire::to_string(s)));
          break;
        }
        role_.on_hold(h);
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
        if (!halting()) {
          fail("the EVM '" + topology_.name(c.peer) + "' is lost: " + std::string(c.reason));
        }
      } else {
        role_.bu_gone(c.peer);
      }
      break;
  }
  c.message.clear();
}

int ReadoutUnit::do_work() {
  if (failed()) return 0;
  int work = 0;
  const std::size_t n = endpoint_->poll(completions_);
  for (std::size_t i = 0; i < n; ++i) on_completion(completions_[i]);
  work += static_cast<int>(n);
  // Ahead of the assigns while enabled; otherwise only what is already assigned must be made.
  const std::uint64_t limit = role_.assigned() + (producing() ? topology_.lookahead_events : 0);
  work += static_cast<int>(role_.produce(limit));
  work += role_.send();
  role_.publish();
  if (role_.failed()) fail(role_.failure());
  const ReadoutStore* store = role_.store();
  // Drained once every block is released, or (the EVM gone) nothing more can be posted; a
  // BU that hangs with our last messages unread does not hold up the halt.
  idle_.store(
      halting() && store->blocks_waiting() == 0 && (store->blocks_held() == 0 || role_.idle()),
      std::memory_order_release);
  return work;
}

bool ReadoutUnit::drained() const {
  return idle_.load(std::memory_order_acquire) || failed();
}

nlohmann::json ReadoutUnit::results() const {
  const ReadoutRole::Figures f = role_.figures();
  return {
      {"events_produced", f.events_produced},
      {"bytes_produced", f.bytes_produced},
      {"blocks_sent", f.blocks_cut},
      {"throttled_ns", f.throttled_ns},
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
