#include "sim_endpoint.hpp"

#include <algorithm>
#include <simgrid/Exception.hpp>
#include <simgrid/kernel/Timer.hpp>
#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Semaphore.hpp>
#include <string>

#include "transport/detail/endpoint_common.hpp"
#include "transport/sim/sim_simgrid.hpp"

namespace daqflow::transport::sim {

using detail::PeerState;

SimEndpoint::SimEndpoint(std::shared_ptr<Network> network, const EndpointOptions& options,
                         std::string name)
    : network_(std::move(network)),
      options_(options),
      name_(std::move(name)),
      mailbox_(network_->mailboxes[options.self]),
      session_(next_session()),
      peers_(network_->addresses.size()),
      slots_(std::make_unique<Parcel*[]>(options.recv_buffers)),
      credits_(options.recv_buffers),
      events_(2 * network_->addresses.size() + 16),
      wakeup_(sg::Semaphore::create(0)) {
  stats_.set_peer_count(network_->addresses.size());
  for (std::uint32_t i = 0; i < options.recv_buffers; ++i) {
    slots_[i] = nullptr;
    free_slots_.push_back(options.recv_buffers - 1 - i);
  }
  network_->attach(options.self, this);
  post_receives();  // a peer may connect before this application first polls
}

SimEndpoint::~SimEndpoint() {
  close(std::chrono::milliseconds(2000));
}

bool SimEndpoint::on_actor() const {
  return !sg::Actor::is_maestro();
}

Result<void> SimEndpoint::connect(AppIndex peer) {
  auto checked = detail::check_connect(name_, network_->addresses, peer, closed_);
  if (!checked) return checked;
  Peer& p = peers_[peer];
  if (p.state == PeerState::closed || p.state == PeerState::failed) p = Peer{};  // again
  if (p.state != PeerState::idle) return ok();
  p.state = PeerState::connecting;
  post_signal(peer, Parcel::Kind::hello);
  return ok();
}

bool SimEndpoint::connected(AppIndex peer) const {
  return peer < peers_.size() && peers_[peer].state == PeerState::open;
}

SendStatus SimEndpoint::post_send(AppIndex peer, Message& message) {
  const auto check =
      detail::check_post(closed_, peer, peers_.size(), message, options_.max_message_size);
  if (check.status != SendStatus::ok) return check.status;
  Peer& p = peers_[peer];
  if (p.state != PeerState::open) return detail::send_status(p.state);
  if (p.data_in_flight >= options_.pipeline_depth) {
    stats_.back_pressure(peer);
    return SendStatus::back_pressure;
  }
  Parcel* parcel = network_->make_parcel(Parcel::Kind::data, options_.self, peer, 2);
  parcel->session = session_;
  parcel->order = p.next_order++;
  parcel->sequence = p.next_sequence++;
  parcel->size = check.size;
  // Phantom payloads stand for more than they hold; control messages for what the study sets.
  parcel->scale = carries_payload(message.type) ? network_->options.payload_scale
                                                : network_->options.control_scale;
  Outgoing o;
  o.kind = Parcel::Kind::data;
  o.order = parcel->order;
  o.sequence = parcel->sequence;
  o.tag = message.tag;
  o.size = check.size;
  o.type = message.type;
  o.flags = message.flags;
  parcel->message = std::move(message);
  message.clear();
  wire_sent_.total += network_->wire_bytes(*parcel);
  if (carries_payload(o.type)) wire_sent_.data += parcel->size * parcel->scale;
  post(peer, parcel, std::move(o));
  cpu_ns_ += network_->options.send_message_ns +
             network_->options.send_byte_ns * parcel->scale * check.size;
  return SendStatus::ok;
}

void SimEndpoint::post(AppIndex peer, Parcel* parcel, Outgoing outgoing) {
  Peer& p = peers_[peer];
  outgoing.parcel = parcel;
  const bool held =
      !p.out.empty() && p.out.front().kind == Parcel::Kind::hello && !p.out.front().done;
  if (!held) start(peer, outgoing);
  if (outgoing.kind == Parcel::Kind::data) ++p.data_in_flight;
  p.out.push_back(std::move(outgoing));
}

void SimEndpoint::start(AppIndex peer, Outgoing& outgoing) {
  outgoing.started = true;
  if (fifo()) {
    outgoing.parcel->sender_waits = true;
    ++travelling_;
    network_->send(outgoing.parcel);
    return;
  }
  const InSimulator in(simulator_ns_);
  outgoing.comm = network_->mailboxes[peer]->put_async(
      outgoing.parcel, static_cast<std::uint64_t>(network_->wire_bytes(*outgoing.parcel)));
  watches().add(outgoing.comm, this);
  puts_.push_back(outgoing.comm);
  put_peers_.push_back(peer);
}

void SimEndpoint::post_signal(AppIndex peer, Parcel::Kind kind) {
  // hello: ours and the receiver's; bye and reset: the receiver's alone (nobody waits for them).
  Parcel* parcel =
      network_->make_parcel(kind, options_.self, peer, kind == Parcel::Kind::hello ? 2 : 1);
  parcel->session = session_;
  wire_sent_.total += network_->wire_bytes(*parcel);
  if (kind == Parcel::Kind::hello) {
    // Tracked: the link is open once it has arrived.
    parcel->order = 0;
    Outgoing o;
    o.kind = kind;
    post(peer, parcel, std::move(o));
    return;
  }
  // bye and reset: this endpoint is going away; nobody waits for them.
  parcel->order = peers_[peer].next_order++;
  if (fifo()) {
    network_->send(parcel);
    return;
  }
  const InSimulator in(simulator_ns_);
  network_->mailboxes[peer]->put_init(parcel, network_->options.overhead_bytes)->detach();
}

void SimEndpoint::post_receives() {
  if (credits_ == 0 || closed_) return;
  if (fifo()) {
    network_->credits_available(options_.self);
    return;
  }
  const InSimulator in(simulator_ns_);
  while (credits_ > 0 && !closed_) {
    const std::uint32_t slot = free_slots_.back();
    free_slots_.pop_back();
    gets_.push_back(mailbox_->get_async<Parcel>(&slots_[slot]));
    watches().add(gets_.back(), this);
    get_slots_.push_back(slot);
    --credits_;
  }
}

void SimEndpoint::progress() {
  if (!changed_ && all_changes_seen_ == watches().all_changes()) return;
  changed_ = false;
  all_changes_seen_ = watches().all_changes();
  if (fifo()) {
    // Arrivals are in scratch_ already (Network::arrive); sends that arrived are here.
    for (Parcel* parcel : delivered_) {
      Peer& p = peers_[parcel->to];
      const auto o = std::find_if(p.out.begin(), p.out.end(),
                                  [parcel](const Outgoing& x) { return x.parcel == parcel; });
      if (o != p.out.end()) sent(parcel->to, p, *o);
    }
    delivered_.clear();
    return;
  }
  const InSimulator in(simulator_ns_);
  for (;;) {
    const std::ptrdiff_t ended = test_any(puts_, waiting_);
    if (ended < 0) break;
    const auto k = static_cast<std::size_t>(ended);
    const AppIndex index = put_peers_[k];
    const sg::CommPtr comm = puts_[k];
    watches().remove(comm, this);
    swap_remove(puts_, k);
    swap_remove(put_peers_, k);
    Peer& p = peers_[index];
    const auto o = std::find_if(p.out.begin(), p.out.end(),
                                [&comm](const Outgoing& x) { return x.comm == comm; });
    if (o != p.out.end()) sent(index, p, *o);
  }
  for (;;) {
    const std::ptrdiff_t ended = test_any(gets_, waiting_);
    if (ended < 0) break;
    const auto k = static_cast<std::size_t>(ended);
    const std::uint32_t slot = get_slots_[k];
    watches().remove(gets_[k], this);
    swap_remove(gets_, k);
    swap_remove(get_slots_, k);
    if (slots_[slot] != nullptr) {
      slots_[slot]->taken = true;
      scratch_.push_back(slots_[slot]);
    } else {
      ++credits_;
    }
    slots_[slot] = nullptr;
    free_slots_.push_back(slot);
  }
}

void SimEndpoint::sent(AppIndex index, Peer& p, Outgoing& o) {
  // Ended: delivered, or given up by a receiver that went away (the message then counts as sent,
  // as on a stream whose peer closed).
  o.done = true;
  o.comm = nullptr;
  if (fifo()) {
    o.parcel->sender_waits = false;
    --travelling_;
  }
  network_->unref(o.parcel);
  o.parcel = nullptr;
  if (o.kind == Parcel::Kind::hello) {
    if (p.state == PeerState::connecting) open_peer(index, p);
    for (Outgoing& held : p.out) {
      if (!held.started) start(index, held);
    }
  }
  if (!p.out.empty() && p.out.front().done &&
      std::find(sending_.begin(), sending_.end(), index) == sending_.end()) {
    sending_.push_back(index);
  }
}

void SimEndpoint::take_arrivals(detail::Emitter& emit) {
  // A session's hello first: it opens the way for what the session sent after it.
  for (Parcel*& parcel : scratch_) {
    if (parcel->kind != Parcel::Kind::hello) continue;
    accept(parcel, emit);
    parcel = nullptr;
  }
  for (Parcel* parcel : scratch_) {
    if (parcel != nullptr) accept(parcel, emit);
  }
  scratch_.clear();
}

void SimEndpoint::release(Parcel* parcel) {
  network_->unref(parcel);
  ++credits_;
}

void SimEndpoint::accept(Parcel* parcel, detail::Emitter& emit) {
  if (parcel->abandoned) {
    release(parcel);  // its link went away while it travelled
    return;
  }
  const AppIndex from = parcel->from;
  Peer& p = peers_[from];
  const bool ended = p.state == PeerState::closed || p.state == PeerState::failed;
  switch (parcel->kind) {
    case Parcel::Kind::hello:
      if (p.in_session != 0 && p.in_session != parcel->session && !ended) {
        // A new session while we still held the old one open: the peer was restarted.
        end_peer(from, PeerState::failed, &emit,
                 "the peer connected again: its earlier session was lost");
      }
      if (p.state == PeerState::closed || p.state == PeerState::failed) p = Peer{};
      p.in_session = parcel->session;
      p.expected = 1;
      if (p.state == PeerState::idle) {
        // Answer with our own hello, so that the peer hears from this session before any reply.
        open_peer(from, p);
        post_signal(from, Parcel::Kind::hello);
      }
      release(parcel);
      return;
    case Parcel::Kind::reset:
      if (parcel->session == p.in_session && !ended) {
        end_peer(from, PeerState::failed, &emit, "connection reset: the peer's endpoint aborted");
      }
      release(parcel);
      return;
    case Parcel::Kind::data:
    case Parcel::Kind::bye:
      break;
  }
  if (parcel->session != p.in_session || ended || p.state == PeerState::idle) {
    release(parcel);  // what an earlier session left, or the link is gone
    return;
  }
  auto at = std::upper_bound(p.arrived.begin(), p.arrived.end(), parcel->order,
                             [](std::uint64_t order, const Parcel* q) { return order < q->order; });
  p.arrived.insert(at, parcel);
  if (!p.ready && p.arrived.front()->order == p.expected) {
    p.ready = true;
    ready_.push_back(from);
  }
}

void SimEndpoint::hand_out(detail::Emitter& emit) {
  for (std::size_t i = 0; i < ready_.size();) {
    const AppIndex index = ready_[i];
    Peer& p = peers_[index];
    while (!p.arrived.empty() && p.arrived.front()->order == p.expected && emit.room()) {
      Parcel* parcel = p.arrived.front();
      p.arrived.erase(p.arrived.begin());
      ++p.expected;
      if (parcel->kind == Parcel::Kind::bye) {
        release(parcel);
        end_peer(index, PeerState::closed, &emit, {});
        break;
      }
      Completion& c = emit.next();
      c.kind = Completion::Kind::recv;
      c.peer = index;
      c.sequence = parcel->sequence;
      c.size = parcel->size;
      c.reason = {};
      c.message = std::move(parcel->message);
      parcel->message.clear();
      stats_.received(index, parcel->size);
      cpu_ns_ += network_->options.recv_message_ns +
                 network_->options.recv_byte_ns * parcel->scale * parcel->size;
      release(parcel);
    }
    if (!p.arrived.empty() && p.arrived.front()->order == p.expected) {
      ++i;  // no room left: next poll
      continue;
    }
    p.ready = false;
    swap_remove(ready_, i);
  }
}

void SimEndpoint::report_sends(detail::Emitter& emit) {
  for (std::size_t i = 0; i < sending_.size();) {
    const AppIndex index = sending_[i];
    Peer& p = peers_[index];
    while (!p.out.empty() && p.out.front().done && emit.room()) {
      const Outgoing& o = p.out.front();
      if (o.kind == Parcel::Kind::data) {
        emit.send_done(index, o.sequence, o.size, o.type, o.flags, o.tag);
        stats_.sent(index, o.size);
        --p.data_in_flight;
      }
      p.out.pop_front();
    }
    if (!p.out.empty() && p.out.front().done) {
      ++i;
      continue;
    }
    swap_remove(sending_, i);
  }
}

void SimEndpoint::open_peer(AppIndex /*index*/, Peer& peer) {
  peer.state = PeerState::open;
  if (!peer.counted) {
    peer.counted = true;
    stats_.peer_opened();
  }
}

void SimEndpoint::end_peer(AppIndex index, PeerState state, detail::Emitter* emit,
                           std::string_view reason) {
  Peer& p = peers_[index];
  if (p.state == PeerState::closed || p.state == PeerState::failed) return;
  p.state = state;
  if (p.counted) {
    p.counted = false;
    stats_.peer_closed();
  }
  drop_outgoing(p);
  drop_arrived(p);
  if (emit == nullptr) return;
  Completion c;
  c.peer = index;
  if (state == PeerState::failed) {
    c.kind = Completion::Kind::error;
    c.reason = reason;
    stats_.peer_errors.add_single_writer();
  } else {
    c.kind = Completion::Kind::peer_closed;
  }
  (void)emit->event(std::move(c));
}

void SimEndpoint::drop_outgoing(Peer& peer) {
  for (Outgoing& o : peer.out) {
    if (o.done) continue;
    if (fifo()) {
      if (o.started) {
        // On its way, or waiting for a credit: the Network holds the receiver's reference.
        o.parcel->sender_waits = false;
        std::erase(delivered_, o.parcel);
        --travelling_;
      }
    } else if (o.comm) {
      const auto it = std::find(puts_.begin(), puts_.end(), o.comm);
      if (it != puts_.end()) {
        const auto k = static_cast<std::size_t>(it - puts_.begin());
        swap_remove(puts_, k);
        swap_remove(put_peers_, k);
      }
      watches().remove(o.comm, this);
      if (on_actor()) settle(o.comm);
    }
    Network::abandon(*o.parcel);
    network_->unref(o.parcel);
    // A parcel held for our hello never travelled: nobody else will ever hold it.
    if (!o.started) network_->unref(o.parcel);
    o.parcel = nullptr;
    o.comm = nullptr;
  }
  peer.out.clear();
  peer.data_in_flight = 0;
}

void SimEndpoint::drop_arrived(Peer& peer) {
  for (Parcel* parcel : peer.arrived) release(parcel);
  peer.arrived.clear();
  peer.ready = false;
  // ready_ may still name the peer: hand_out() finds nothing there and forgets it.
}

bool SimEndpoint::has_work() const {
  if (!events_.empty() || !ready_.empty() || !scratch_.empty() || !delivered_.empty()) {
    return true;
  }
  for (const AppIndex index : sending_) {
    const Peer& p = peers_[index];
    if (!p.out.empty() && p.out.front().done) return true;
  }
  return false;
}

void SimEndpoint::charge_cpu() {
  if (cpu_ns_ <= 0) return;
  const InSimulator in(simulator_ns_);
  const double flops = cpu_ns_ * kNs * sg::this_actor::get_host()->get_speed();
  charged_ns_ += cpu_ns_;
  cpu_ns_ = 0;
  try {
    sg::this_actor::execute(flops);
  } catch (const simgrid::Exception&) {
    // The host failed under us: the actor ends on its next simulator call.
  }
}

std::size_t SimEndpoint::poll(std::span<Completion> out) {
  if (closed_) return 0;
  detail::Emitter emit(out, events_);
  progress();
  take_arrivals(emit);
  hand_out(emit);
  report_sends(emit);
  post_receives();
  const std::size_t n = emit.produced();
  if (n == 0) cpu_ns_ += network_->options.poll_ns;
  if (n == 0 || cpu_ns_ >= kChargeEveryNs) charge_cpu();
  return n;
}

void SimEndpoint::wait(std::chrono::microseconds timeout) {
  const double seconds = std::chrono::duration<double>(timeout).count();
  if (closed_) {
    const InSimulator in(simulator_ns_);
    sg::this_actor::sleep_for(seconds);
    return;
  }
  charge_cpu();
  progress();
  {
    detail::Emitter queue_only({}, events_);
    take_arrivals(queue_only);
  }
  if (has_work()) return;
  post_receives();
  if (changed_) return;  // something ended while we looked: the next poll() finds it
  // Asleep until one of our communications ends (mark_changed() wakes us) or the timeout.
  const InSimulator in(simulator_ns_);
  sleeping_ = true;
  (void)wakeup_->acquire_timeout(seconds);
  sleeping_ = false;
}

void SimEndpoint::mark_changed() {
  changed_ = true;
  if (!sleeping_) return;
  // From the simulator, between the actors' turns: the semaphore wakes the actor in the next.
  sleeping_ = false;
  wakeup_->release();
}

bool SimEndpoint::take_credit() {
  if (closed_ || credits_ == 0) return false;
  --credits_;
  return true;
}

void SimEndpoint::arrived(Parcel* parcel) {
  parcel->taken = true;
  scratch_.push_back(parcel);
  mark_changed();
}

void SimEndpoint::delivered(Parcel* parcel) {
  delivered_.push_back(parcel);
  mark_changed();
}

std::size_t SimEndpoint::in_flight(AppIndex peer) const {
  return peer < peers_.size() ? peers_[peer].data_in_flight : 0;
}

void SimEndpoint::close(std::chrono::milliseconds timeout) {
  shut(true, timeout);
}

void SimEndpoint::abort() {
  shut(false, std::chrono::milliseconds(0));
}

void SimEndpoint::shut(bool orderly, std::chrono::milliseconds timeout, bool tell) {
  if (closed_) return;
  const bool actor = on_actor();
  if (actor && orderly) {
    // What was posted leaves first, for as long as the timeout allows (simulated time).
    const double deadline =
        sg::Engine::get_clock() + std::chrono::duration<double>(timeout).count();
    for (;;) {
      progress();
      const double left = deadline - sg::Engine::get_clock();
      if ((fifo() ? travelling_ == 0 : puts_.empty()) || left <= 0) break;
      if (fifo()) {
        const InSimulator in(simulator_ns_);
        sleeping_ = true;
        (void)wakeup_->acquire_timeout(left);
        sleeping_ = false;
        continue;
      }
      waiting_.assign(puts_.begin(), puts_.end());
      forget_observer();
      try {
        (void)sg::Activity::wait_any_for(waiting_, left);
      } catch (const simgrid::Exception&) {
      }
    }
  }
  if (actor && tell) {
    for (std::size_t i = 0; i < peers_.size(); ++i) {
      const PeerState s = peers_[i].state;
      // A peer whose endpoint is gone hears nothing more: what was sent to it would wait in
      // its mailbox, which every later message to it walks, for ever.
      if (!network_->live[i]) continue;
      if (s == PeerState::open || (!orderly && s == PeerState::connecting)) {
        post_signal(static_cast<AppIndex>(i), orderly ? Parcel::Kind::bye : Parcel::Kind::reset);
      }
    }
  }
  for (Peer& p : peers_) {
    drop_outgoing(p);
    drop_arrived(p);
    if (p.counted) stats_.peer_closed();
    p.counted = false;
    if (p.state != PeerState::idle) p.state = PeerState::closed;
  }
  for (Parcel* parcel : scratch_) network_->unref(parcel);
  scratch_.clear();
  for (std::size_t k = 0; k < gets_.size(); ++k) {
    watches().remove(gets_[k], this);
    Parcel*& slot = slots_[get_slots_[k]];
    if (actor) {
      try {
        if (!gets_[k]->test()) gets_[k]->cancel();
      } catch (const simgrid::Exception&) {
      }
    }
    if (slot != nullptr) network_->unref(slot);  // arrived, never handed out
    slot = nullptr;
  }
  gets_.clear();
  get_slots_.clear();
  network_->detach(options_.self, this);
  network_->abandon_to(options_.self);
  ready_.clear();
  sending_.clear();
  events_.clear();
  network_->live[options_.self] = false;
  closed_ = true;
  watches().mark_all_changed();
}

}  // namespace daqflow::transport::sim
