// Peer set-up and loss for the ofi endpoint: connecting, hello, acknowledgements and
// heartbeats, bye, and the silence that marks a lost peer (RDM endpoints have no connection that
// could break).

#include <poll.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>
#include <unistd.h>

#include <algorithm>

#include "daqflow/core/clock.hpp"
#include "daqflow/core/log.hpp"
#include "ofi_endpoint.hpp"
#include "transport/detail/connect_backoff.hpp"
#include "transport/detail/endpoint_common.hpp"

namespace daqflow::transport::ofi {
namespace {}  // namespace

Result<void> OfiEndpoint::connect(AppIndex index) {
  const std::string me = detail::endpoint_name("ofi", table_, self());
  if (auto r = detail::check_connect(me, table_, index, closed_); !r) return r;
  Peer& p = peers_[index];
  if (p.state == Peer::State::open || p.state == Peer::State::connecting) return ok();
  const AppAddress& to = table_[index];
  // Over tcp the peer's data port answers probes; the shm provider needs no address.
  if (shm_prefix_.empty()) {
    auto address = detail::peer_data_address(me, table_, index);
    if (!address) return address.error();
    p.address = std::move(*address);
  }
  if (p.state != Peer::State::idle) {
    const bool busy = std::any_of(p.slots.begin(), p.slots.end(),
                                  [](const SendSlot& s) { return s.posted && !s.provider_done; });
    if (busy || p.hello.busy || p.bye.busy || p.heartbeat.busy) {
      return Error(ErrorCode::unavailable,
                   me + ": cannot connect to '" + to.id +
                       "' again yet: sends of its last connection are still with the provider");
    }
    reset_peer(p);
  }
  p.state = Peer::State::connecting;
  p.connect_started_ns = core::monotonic_ns();
  p.backoff.start(p.connect_started_ns);
  p.next_probe_ns = 0;
  p.hello_owed = true;
  next_control_ns_ = 0;
  return ok();
}

bool OfiEndpoint::ensure_address(AppIndex index) {
  if (parts_.addresses[index] != FI_ADDR_NOTAVAIL) return true;
  if (shm_prefix_.empty()) return false;  // tcp-based: inserted at creation, or no data port
  // The shm provider maps a peer's region when its address is inserted: wait until it exists.
  const std::string name = shm_prefix_ + std::to_string(index);
  if (::access(("/dev/shm/" + name).c_str(), F_OK) != 0) return false;
  fi_addr_t addr = FI_ADDR_NOTAVAIL;
  if (fi_av_insert(parts_.fids.av, name.c_str(), 1, &addr, 0, nullptr) != 1) return false;
  parts_.addresses[index] = addr;
  return true;
}

bool OfiEndpoint::post_control(AppIndex index, ControlSlot& slot, wire::MessageType type,
                               std::uint64_t sequence, std::uint64_t tag) {
  if (slot.busy || !ensure_address(index)) return false;
  wire::MessageHeader h;
  h.type = type;
  h.source = self();
  h.destination = index;
  h.sequence = sequence;
  h.tag = tag;
  wire::encode(h, std::span<std::byte, wire::kHeaderSize>(slot.header, wire::kHeaderSize));
  const ssize_t rc =
      fi_tsend(parts_.fids.ep, slot.header, wire::kHeaderSize, parts_.control->desc(),
               parts_.addresses[index], kTagControl, &slot.ctx);
  if (rc != 0) return false;
  slot.busy = true;
  peers_[index].last_sent_ns = core::monotonic_ns();
  return true;
}

void OfiEndpoint::repost_control(std::uint32_t k) {
  std::byte* at = control_recv_base_ + std::size_t{k} * kControlSize;
  // A full receive queue cannot happen here (the provider took this one before); should it fail,
  // the slot simply stays idle.
  (void)fi_trecv(parts_.fids.ep, at, kControlSize, parts_.control->desc(), FI_ADDR_UNSPEC,
                 kTagControl, 0, &control_ctx_[k]);
}

void OfiEndpoint::on_control(std::uint32_t k, std::size_t length, detail::Emitter& emit) {
  wire::MessageHeader h;
  const auto bytes =
      std::span<const std::byte>(control_recv_base_ + std::size_t{k} * kControlSize, length);
  const wire::DecodeStatus why = wire::decode(bytes, 0, h);
  repost_control(k);  // h holds everything we need
  if (why != wire::DecodeStatus::ok) {
    reject(wire::kNoApplication, wire::to_string(why), emit);
    return;
  }
  if (h.type == wire::MessageType::hello && !detail::same_run(h, options_.run)) {
    // Another run's: not answered, so its sender never takes this endpoint for its peer.
    // Its application indexes are those of another address table.
    stats_.strangers.add_single_writer();
    const std::string claimed =
        h.source < table_.size() ? table_[h.source].id : std::to_string(h.source);
    strangers_.refused("ofi", table_[self()].id, "an address the provider does not name", claimed,
                       detail::run_of(h), options_.run);
    return;
  }
  if (h.source >= peers_.size() || h.destination != self()) {
    reject(wire::kNoApplication, "control message names the wrong applications", emit);
    return;
  }
  const AppIndex from = h.source;
  Peer& p = peers_[from];
  switch (h.type) {
    case wire::MessageType::hello:
      if (p.state == Peer::State::closed || p.state == Peer::State::failed) {
        // A new endpoint for that application: a new peer, if the old one's sends are done.
        const bool busy = std::any_of(p.slots.begin(), p.slots.end(), [](const SendSlot& s) {
          return s.posted && !s.provider_done;
        });
        if (!busy) open_peer(from, true);
      } else if (p.state != Peer::State::open) {
        // Idle: answered with our hello. Connecting: the answer to ours, if it went out.
        // (Open: a hello repeated before our answer reached it, or from a new endpoint of the
        // application while we still hold the old one's session, which its silence ends; the
        // sender repeats its hello until it is answered.)
        open_peer(from, p.state != Peer::State::connecting || p.hello_owed);
      }
      break;
    case wire::MessageType::heartbeat:
      if (p.state != Peer::State::open) return;
      p.last_heard_ns = core::monotonic_ns();
      if (h.sequence > p.acked) {
        p.acked = std::min(h.sequence, p.next_send_sequence);
        if (p.count > 0) mark_active(from);
      }
      break;
    case wire::MessageType::bye:
      if (p.state != Peer::State::open) return;
      p.state = Peer::State::closing;
      p.bye_sequence = h.sequence;
      drop_sends(p);
      if (p.next_recv_sequence >= p.bye_sequence) finish_closing(from, emit);
      break;
    default:
      reject(from, "unexpected control message", emit);
      break;
  }
}

void OfiEndpoint::open_peer(AppIndex index, bool send_hello) {
  Peer& p = peers_[index];
  if (p.state != Peer::State::open && p.state != Peer::State::closing) {
    stats_.peer_opened();
  }
  reset_peer(p);
  p.state = Peer::State::open;
  p.hello_owed = send_hello;
  if (send_hello) mark_active(index);
}

bool OfiEndpoint::probe_reachable(AppIndex index, std::int64_t now) {
  Peer& p = peers_[index];
  if (!shm_prefix_.empty()) return ensure_address(index);
  if (!p.probe) {
    if (now < p.next_probe_ns) return false;
    auto dialed = detail::start_connect(p.address, 0);
    if (dialed.connected) {
      detail::close_with_reset(dialed.fd);
      return true;
    }
    if (!dialed.fd) {
      p.next_probe_ns = p.backoff.next_attempt(now);
      return false;
    }
    p.probe = std::move(dialed.fd);
  }
  pollfd fd{p.probe.get(), POLLOUT, 0};
  if (::poll(&fd, 1, 0) <= 0) return false;
  const bool reached = detail::pending_error(p.probe.get()) == 0;
  // A reset, so that the peer's provider drops the probe at once.
  detail::close_with_reset(p.probe);
  p.probe.reset();
  if (!reached) p.next_probe_ns = p.backoff.next_attempt(now);
  return reached;
}

void OfiEndpoint::reset_peer(Peer& p) {
  drop_sends(p);
  p.head = 0;
  p.count = 0;
  p.posted = 0;
  p.next_send_sequence = 0;
  p.acked = 0;
  p.next_recv_sequence = 0;
  p.acked_to_peer = 0;
  p.bye_sequence = 0;
  p.last_heard_ns = core::monotonic_ns();
  p.hello_owed = false;
}

void OfiEndpoint::run_control(std::int64_t now, detail::Emitter& emit) {
  for (std::size_t k = 0; k < acks_owed_.size();) {
    const AppIndex index = acks_owed_[k];
    Peer& p = peers_[index];
    const bool done =
        p.state != Peer::State::open ||
        post_control(index, p.heartbeat, wire::MessageType::heartbeat, p.next_recv_sequence, 0);
    if (done) {
      p.acked_to_peer = p.next_recv_sequence;
      p.ack_listed = false;
      acks_owed_[k] = acks_owed_.back();
      acks_owed_.pop_back();
    } else {
      ++k;
    }
  }
  if (now < next_control_ns_) return;
  next_control_ns_ = now + kControlPeriodNs;
  for (AppIndex index = 0; index < peers_.size(); ++index) {
    Peer& p = peers_[index];
    switch (p.state) {
      case Peer::State::connecting:
        // Reachable: the hello goes out, and the peer's answer (its own hello) opens it, so
        // that nothing is sent to an endpoint that did not take us for one of its run.
        if (p.hello_owed ? probe_reachable(index, now) : now - p.hello_sent_ns >= kHelloRepeatNs) {
          if (post_control(index, p.hello, wire::MessageType::hello, options_.run.number,
                           options_.run.key)) {
            p.hello_owed = false;
            p.hello_sent_ns = now;
          }
        }
        if (now - p.connect_started_ns > detail::ConnectBackoff::kGiveUpAfterNs) {
          fail_peer(index,
                    p.hello_owed ? "cannot connect: no answer from the peer (is it running?)"
                                 : "cannot connect: the peer did not answer the hello (an "
                                   "endpoint of another run?)",
                    &emit);
        }
        break;
      case Peer::State::open:
        if (now - p.last_sent_ns >= kHeartbeatIntervalNs) {
          (void)post_control(index, p.heartbeat, wire::MessageType::heartbeat, p.next_recv_sequence,
                             0);
        }
        if (now - p.last_heard_ns > kSilenceLimitNs) {
          fail_peer(index, "peer silent for 3 s: its process is gone or stopped polling", &emit);
        }
        break;
      default:
        break;
    }
  }
}

void OfiEndpoint::drop_sends(Peer& p) {
  // Sends the provider still holds keep their slot (and buffers) until it reports them.
  for (SendSlot& s : p.slots) {
    if (s.posted && !s.provider_done) continue;
    s.message.clear();
    s.bounce.reset();
  }
}

void OfiEndpoint::finish_closing(AppIndex index, detail::Emitter& emit) {
  Peer& p = peers_[index];
  p.state = Peer::State::closed;
  stats_.peer_closed();
  Completion c;
  c.kind = Completion::Kind::peer_closed;
  c.peer = index;
  post_event(std::move(c), &emit);
}

void OfiEndpoint::fail_peer(AppIndex index, std::string_view reason, detail::Emitter* emit) {
  Peer& p = peers_[index];
  if (p.state == Peer::State::idle || p.state == Peer::State::closed ||
      p.state == Peer::State::failed) {
    return;
  }
  if (p.state == Peer::State::open || p.state == Peer::State::closing) {
    stats_.peer_closed();
  }
  p.state = Peer::State::failed;
  drop_sends(p);
  stats_.peer_errors.add_single_writer();
  spdlog::debug("ofi endpoint of application '{}': peer '{}' failed: {}", table_[self()].id,
                table_[index].id, reason);
  Completion c;
  c.kind = Completion::Kind::error;
  c.peer = index;
  c.reason = reason;
  post_event(std::move(c), emit);
}

void OfiEndpoint::reject(AppIndex index, std::string_view reason, detail::Emitter& emit) {
  stats_.rejected.add_single_writer();
  if (index != wire::kNoApplication) {
    fail_peer(index, reason, &emit);
    return;
  }
  stats_.peer_errors.add_single_writer();
  Completion c;
  c.kind = Completion::Kind::error;
  c.peer = wire::kNoApplication;
  c.reason = reason;
  post_event(std::move(c), &emit);
}

void OfiEndpoint::post_event(Completion&& event, detail::Emitter* emit) {
  if (emit != nullptr) {
    (void)emit->event(std::move(event));
  } else {
    (void)events_.push(std::move(event));
  }
}

}  // namespace daqflow::transport::ofi
