#include "ru_app.hpp"

#include "daqflow/wire/evb.hpp"

namespace daqflow::apps::evb {

Result<void> ReadoutUnit::setup(runtime::AppContext& ctx, const RuSettings& s) {
  auto topology = resolve_topology(ctx);
  if (!topology) return topology.error();
  topology_ = std::move(*topology);
  const int position = topology_.ru_position(ctx.self().index);

  auto endpoint = ctx.endpoint(nullptr);
  if (!endpoint) return endpoint.error().context("endpoint");
  if (auto r = role_.configure(ctx, topology_, static_cast<std::uint32_t>(position), *endpoint,
                               s.readout);
      !r) {
    return r;
  }
  for (const auto bu : topology_.bus) {
    if (auto r = (*endpoint)->connect(bu); !r) {
      return r.error().context("connecting to BU '" + topology_.name(bu) + "'");
    }
  }
  register_handlers();
  return ok();
}

void ReadoutUnit::register_handlers() {
  // The EVM's messages: one that does not decode leaves a block this RU cannot place.
  runtime::DataPath& path = data_path();
  const auto from_evm = [this, &path](auto message, const char* what, auto apply) {
    using Message = decltype(message);
    return decoded<Message>(
        path,
        [this, apply](AppIndex peer, const Message& m, std::int64_t) {
          if (peer != topology_.evm) {
            data_path().reject();
            return;
          }
          apply(m);
        },
        [this, what](AppIndex peer, wire::PayloadStatus s) {
          if (peer == topology_.evm) {
            fail(std::string("malformed ") + what + " from " + topology_.name(peer) + ": " +
                 std::string(wire::to_string(s)));
          }
        });
  };
  path.on(
      wire::MessageType::assign,
      from_evm(wire::Assign{}, "assign", [this](const wire::Assign& a) { role_.on_assign(a); }));
  path.on(wire::MessageType::release, from_evm(wire::Release{}, "release", [this](const auto& r) {
            role_.on_release(r.below);
          }));
  path.on(wire::MessageType::hold,
          from_evm(wire::Hold{}, "hold", [this](const wire::Hold& h) { role_.on_hold(h); }));
  path.on_sent([this](const transport::Completion& c) { role_.on_send_done(c.peer); });
  path.on_peer_gone([this](AppIndex peer, std::string_view reason, bool) {
    if (peer == topology_.evm && !reason.empty()) {
      if (!halting())
        fail("the EVM '" + topology_.name(peer) + "' is lost: " + std::string(reason));
      return;
    }
    role_.bu_gone(peer);  // the EVM closing in order is the end of the run
  });
  path.on_work([this](std::int64_t) { return work(); });
  // Drained once every block is released, or (the EVM gone) nothing more can be posted; a BU
  // that hangs with our last messages unread does not hold up the halt.
  path.drained_when(
      [this] {
        const ReadoutStore* store = role_.store();
        return store->blocks_waiting() == 0 && (store->blocks_held() == 0 || role_.idle());
      },
      [this] { return role_.describe(); });
}

void ReadoutUnit::release() {
  role_.release();
}

int ReadoutUnit::work() {
  if (failed()) return 0;
  // Blocks assigned and written go out before the next are written: the BU waits for them.
  int work = role_.send();
  // Ahead of the assigns while enabled; otherwise only what is already assigned must be made.
  const std::uint64_t limit = role_.assigned() + (producing() ? topology_.lookahead_events : 0);
  const auto produced = static_cast<int>(role_.produce(limit));
  if (produced > 0) work += produced + role_.send();
  role_.publish();
  if (role_.failed()) fail(role_.failure());
  return work;
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

}  // namespace daqflow::apps::evb
