#include "sim_endpoint.hpp"

#include <time.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <simgrid/Exception.hpp>
#include <simgrid/kernel/Timer.hpp>
#include <simgrid/kernel/resource/Action.hpp>
#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Link.hpp>
#include <simgrid/s4u/Semaphore.hpp>
#include <string>
#include <unordered_map>
#include <xbt/config.hpp>

#include "transport/detail/endpoint_common.hpp"
#include "transport/factories.hpp"

namespace daqflow::transport::sim {
namespace sg = simgrid::s4u;
namespace {

using detail::PeerState;

// Sessions tell the endpoints of one application index apart (a restarted application).
std::atomic<std::uint64_t> g_sessions{0};
// Transports of one process get mailboxes of their own, so that the conformance suite's
// clusters, one after the other in a simulation, never see each other's messages.
std::atomic<std::uint64_t> g_networks{0};

constexpr double kNs = 1e-9;
// CPU owed is executed at once when it reaches this much, even if the actor never waits.
constexpr double kChargeEveryNs = 20'000;

// SimGrid 3.32's test_any and wait_any_for look at each activity from the calling actor before
// they enter the simulator, and for one not yet ended read the actor's observer of its previous
// simulator call, which may be gone by then (a pointer into the actor's stack, reused since): a
// crash at random. A call with no observer (a yield) leaves a null one to find.
void forget_observer() {
  sg::this_actor::yield();
}

// The index of a communication of comms that has ended (-1: none), without blocking: one
// simulator call, unless one of them failed (its other side went away), which shows as an
// exception. A wait with no time to wait rather than test_any: SimGrid 3.32 forgets an activity
// that only a test saw end in its actor's list, which every later activity's end then walks
// (a simulation of many messages slowed down quadratically).
// `any` is the caller's own: the simulator keeps a reference to it until the wait ends, while
// other actors (of this same thread) run.
std::ptrdiff_t test_any(const std::vector<sg::CommPtr>& comms, std::vector<sg::ActivityPtr>& any) {
  if (comms.empty()) return -1;
  forget_observer();
  any.assign(comms.begin(), comms.end());
  try {
    return sg::Activity::wait_any_for(any, 0.0);
  } catch (const simgrid::Exception&) {
    // One of them failed: find it.
  }
  for (std::size_t i = 0; i < comms.size(); ++i) {
    try {
      if (comms[i]->test()) return static_cast<std::ptrdiff_t>(i);
    } catch (const simgrid::Exception&) {
      return static_cast<std::ptrdiff_t>(i);
    }
  }
  return -1;
}

// Makes sure a send will not deliver later unless it has ended: cancels it.
void settle(const sg::CommPtr& comm) {
  try {
    if (comm->test()) return;
  } catch (const simgrid::Exception&) {
    return;
  }
  try {
    comm->cancel();
  } catch (const simgrid::Exception&) {
  }
}

// Counts the CPU time of a stretch of simulator calls: other actors run inside them.
bool g_count_simulator_cpu = true;

class InSimulator {
 public:
  explicit InSimulator(std::int64_t& total)
      : total_(total), start_(g_count_simulator_cpu ? thread_cpu_ns() : 0) {}
  ~InSimulator() {
    if (g_count_simulator_cpu) total_ += thread_cpu_ns() - start_;
  }
  InSimulator(const InSimulator&) = delete;
  InSimulator& operator=(const InSimulator&) = delete;

 private:
  std::int64_t& total_;
  std::int64_t start_;
};

// Which endpoints a communication concerns (its sender's and its receiver's): the network model
// says when its transfer ends or fails, inside the simulator between the actors' turns, and the
// endpoints look at their communications only then. A poll with nothing new asks the simulator
// nothing (asking costs a simulator call per list, each as long as the list).
class Watches {
 public:
  void add(const sg::CommPtr& comm, SimEndpoint* endpoint) {
    connect_once();
    auto& pair = map_[comm->get_impl()];
    (pair[0] == nullptr ? pair[0] : pair[1]) = endpoint;
  }
  void remove(const sg::CommPtr& comm, const SimEndpoint* endpoint) {
    const auto it = map_.find(comm->get_impl());
    if (it == map_.end()) return;
    for (SimEndpoint*& e : it->second) {
      if (e == endpoint) e = nullptr;
    }
    if (it->second[0] == nullptr && it->second[1] == nullptr) map_.erase(it);
  }

  // Something that is not a transfer's end may have changed communications: an endpoint went
  // away (its receives cancelled, its peers' transfers failed). Every endpoint looks once.
  void upheaval() { ++upheavals_; }
  [[nodiscard]] std::uint64_t upheavals() const { return upheavals_; }

 private:
  void connect_once() {
    if (connected_) return;
    connected_ = true;
    sg::Link::on_communication_state_change_cb(
        [this](simgrid::kernel::resource::NetworkAction& action,
               simgrid::kernel::resource::Action::State /*previous*/) {
          // NetworkAction is an Action (its only base), declared but not defined by SimGrid's
          // public headers: the same object.
          const auto& base = reinterpret_cast<const simgrid::kernel::resource::Action&>(action);
          const auto it = map_.find(base.get_activity());
          if (it == map_.end()) return;
          for (SimEndpoint* e : it->second) {
            if (e != nullptr) e->stir();
          }
        });
  }

  std::unordered_map<const void*, std::array<SimEndpoint*, 2>> map_;
  std::uint64_t upheavals_ = 0;
  bool connected_ = false;
};
Watches g_watches;  // one simulation per process, its actors one at a time

// The message types whose payload is the data a DAQ moves (what phantom payloads stand for);
// the others are control: requests, assignments, acknowledgements, credits.
bool carries_payload(wire::MessageType type) {
  switch (type) {
    case wire::MessageType::data:
    case wire::MessageType::block:
    case wire::MessageType::farm_event:
    case wire::MessageType::ts_contribution:
      return true;
    default:
      return false;
  }
}

template <typename T>
void swap_remove(std::vector<T>& v, std::size_t i) {
  if (i + 1 != v.size()) v[i] = std::move(v.back());
  v.pop_back();
}

class SimTransport final : public Transport {
 public:
  explicit SimTransport(std::shared_ptr<Network> network) : network_(std::move(network)) {}

  [[nodiscard]] std::string_view name() const override { return "sim"; }

  [[nodiscard]] Result<std::unique_ptr<Endpoint>> create_endpoint(
      const EndpointOptions& options) override {
    auto checked = detail::check_endpoint_options("sim", network_->addresses, options);
    if (!checked) return checked.error();
    const std::string& who = *checked;
    if (sg::Actor::is_maestro()) {
      return Error(who +
                   ": the sim transport's endpoints belong to simulated applications: create "
                   "them from an actor (daqflow sim)");
    }
    if (network_->live[options.self]) {
      return Error(ErrorCode::conflict, who + " exists already: one endpoint per application");
    }
    network_->live[options.self] = true;
    return std::unique_ptr<Endpoint>(std::make_unique<SimEndpoint>(network_, options, who));
  }

 private:
  std::shared_ptr<Network> network_;
};

}  // namespace

SimEndpoint::SimEndpoint(std::shared_ptr<Network> network, const EndpointOptions& options,
                         std::string name)
    : network_(std::move(network)),
      options_(options),
      name_(std::move(name)),
      mailbox_(network_->mailboxes[options.self]),
      session_(++g_sessions),
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
  g_watches.add(outgoing.comm, this);
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
    g_watches.add(gets_.back(), this);
    get_slots_.push_back(slot);
    --credits_;
  }
}

void SimEndpoint::progress() {
  if (!stirred_ && upheavals_seen_ == g_watches.upheavals()) return;
  stirred_ = false;
  upheavals_seen_ = g_watches.upheavals();
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
    g_watches.remove(comm, this);
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
    g_watches.remove(gets_[k], this);
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
      g_watches.remove(o.comm, this);
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
  if (stirred_) return;  // something ended while we looked: the next poll() finds it
  // Asleep until one of our communications ends (stir() wakes us) or the timeout.
  const InSimulator in(simulator_ns_);
  sleeping_ = true;
  (void)wakeup_->acquire_timeout(seconds);
  sleeping_ = false;
}

void SimEndpoint::stir() {
  stirred_ = true;
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
  stir();
}

void SimEndpoint::delivered(Parcel* parcel) {
  delivered_.push_back(parcel);
  stir();
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
    g_watches.remove(gets_[k], this);
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
  g_watches.upheaval();
}

namespace {

// A factor of SimGrid's network model (network/latency-factor, network/bandwidth-factor: numbers
// in SimGrid 3.32, set by the model, LV08's 13.01 and 0.97).
double model_factor(const std::string& name) {
  try {
    const double value = simgrid::config::get_value<double>(name);
    if (value > 0) return value;
  } catch (const std::exception&) {
  }
  return 1;
}

}  // namespace

Network::Network(const AddressTable& table, const SimOptions& costs)
    : addresses(table),
      options(costs),
      live(table.size(), false),
      heads_(table.size(), nullptr),
      endpoints_(table.size(), nullptr),
      hosts_(table.size(), nullptr),
      waiting_(options.network == SimOptions::Network::fifo ? table.size() : 0) {
  if (options.network == SimOptions::Network::fifo) {
    // What SimGrid's model would apply (LV08: latency x 13.01, bandwidth x 0.97), so that the
    // two models agree where they should: one message alone on its route.
    latency_factor_ = model_factor("network/latency-factor");
    bandwidth_factor_ = model_factor("network/bandwidth-factor");
  }
}

Network::~Network() {
  for (Parcel* head : heads_) {
    while (head != nullptr) {
      Parcel* next = head->next;
      if (head->timer != nullptr) head->timer->remove();
      delete head;
      head = next;
    }
  }
}

double Network::wire_bytes(const Parcel& parcel) const {
  return std::round(parcel.size * parcel.scale) + options.overhead_bytes;
}

void Network::attach(AppIndex index, SimEndpoint* endpoint) {
  endpoints_[index] = endpoint;
  hosts_[index] = sg::this_actor::get_host();
}

void Network::detach(AppIndex index, const SimEndpoint* endpoint) {
  if (endpoints_[index] == endpoint) endpoints_[index] = nullptr;
}

void Network::send(Parcel* parcel) {
  std::deque<Parcel*>& queue = waiting_[parcel->to];
  SimEndpoint* receiver = endpoints_[parcel->to];
  if (queue.empty() && receiver != nullptr && receiver->take_credit()) {
    parcel->receiver_session = receiver->session();
    launch(parcel);
    return;
  }
  queue.push_back(parcel);
}

void Network::credits_available(AppIndex to) {
  std::deque<Parcel*>& queue = waiting_[to];
  SimEndpoint* receiver = endpoints_[to];
  while (!queue.empty()) {
    Parcel* parcel = queue.front();
    if (parcel->abandoned && !parcel->sender_waits) {
      // Its sender gave it up and nobody waits for it: it does not travel.
      queue.pop_front();
      unref(parcel);
      continue;
    }
    if (receiver == nullptr || !receiver->take_credit()) return;
    queue.pop_front();
    parcel->receiver_session = receiver->session();
    launch(parcel);
  }
}

void Network::launch(Parcel* parcel) {
  parcel->route = &route(parcel->from, parcel->to);
  parcel->hop = 0;
  parcel->head_s = parcel->tail_s = sg::Engine::get_clock();
  advance(parcel);
}

void Network::advance(Parcel* parcel) {
  // Cut through, each link served in the order first bytes reach it: a message's first byte
  // enters a link when it has crossed the one before and the link has sent what reached it
  // before; its last byte leaves no sooner than it came in. A link is taken when the message
  // reaches it, not when it is sent, so that one waiting behind others on its sender's link
  // does not hold the links after it meanwhile.
  const double bytes = wire_bytes(*parcel);
  const Route& links = *parcel->route;
  while (parcel->hop < links.size()) {
    LinkQueue& q = *links[parcel->hop];
    if (q.shared && parcel->head_s > sg::Engine::get_clock()) {
      // Set from an actor's turn or the simulator's: they take turns (on one thread, or handing
      // over between threads), so the timer heap is never touched by two at a time.
      parcel->timer = simgrid::kernel::timer::Timer::set(parcel->head_s, [this, parcel] {
        parcel->timer = nullptr;
        advance(parcel);
      });
      return;
    }
    const double start = std::max(parcel->head_s, q.free_at);
    const double end = std::max(start + bytes * q.seconds_per_byte, parcel->tail_s);
    if (q.shared) q.free_at = end;
    parcel->head_s = start + q.latency_s;
    parcel->tail_s = end + q.latency_s;
    ++parcel->hop;
  }
  parcel->timer =
      simgrid::kernel::timer::Timer::set(parcel->tail_s, [this, parcel] { arrive(parcel); });
}

void Network::arrive(Parcel* parcel) {
  parcel->timer = nullptr;
  if (parcel->sender_waits) {
    SimEndpoint* sender = endpoints_[parcel->from];
    if (sender != nullptr && sender->session() == parcel->session) sender->delivered(parcel);
  }
  SimEndpoint* receiver = endpoints_[parcel->to];
  if (receiver != nullptr && receiver->session() == parcel->receiver_session) {
    receiver->arrived(parcel);
    return;
  }
  // The endpoint whose receive it took went away: dropped, as a communication whose receive
  // was cancelled.
  abandon(*parcel);
  unref(parcel);
}

const Route& Network::route(AppIndex from, AppIndex to) {
  const auto [it, fresh] = routes_.try_emplace((std::uint64_t{from} << 32) | to);
  if (!fresh) return it->second;
  std::vector<sg::Link*> links;
  double latency = 0;
  hosts_[from]->route_to(hosts_[to], links, &latency);
  for (const sg::Link* link : links) {
    const auto [q, added] = queues_.try_emplace(link);
    if (added) {
      q->second.seconds_per_byte = 1.0 / (link->get_bandwidth() * bandwidth_factor_);
      q->second.latency_s = link->get_latency() * latency_factor_;
      q->second.shared = link->get_sharing_policy() != sg::Link::SharingPolicy::FATPIPE;
    }
    it->second.push_back(&q->second);
  }
  return it->second;
}

Parcel* Network::make_parcel(Parcel::Kind kind, AppIndex from, AppIndex to, std::uint8_t refs) {
  auto* parcel = new Parcel;
  parcel->kind = kind;
  parcel->from = from;
  parcel->to = to;
  parcel->refs = refs;
  Parcel*& head = heads_[to];
  parcel->next = head;
  if (head != nullptr) head->prev = parcel;
  head = parcel;
  return parcel;
}

void Network::unref(Parcel* parcel) {
  if (--parcel->refs > 0) return;
  if (parcel->prev != nullptr) parcel->prev->next = parcel->next;
  if (parcel->next != nullptr) parcel->next->prev = parcel->prev;
  if (heads_[parcel->to] == parcel) heads_[parcel->to] = parcel->next;
  delete parcel;
}

void Network::abandon(Parcel& parcel) {
  if (parcel.taken) return;
  parcel.abandoned = true;
  parcel.message.clear();
}

void Network::abandon_to(AppIndex to) {
  // A hello carries nothing to give back, and a later endpoint of the index may answer it.
  for (Parcel* p = heads_[to]; p != nullptr; p = p->next) {
    if (p->kind != Parcel::Kind::hello) abandon(*p);
  }
}

std::int64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

void count_simulator_cpu(bool on) {
  g_count_simulator_cpu = on;
}

void close_quietly(Endpoint& endpoint, std::chrono::milliseconds timeout) {
  if (auto* sim = dynamic_cast<SimEndpoint*>(&endpoint)) {
    sim->shut(true, timeout, false);
  } else {
    endpoint.close(timeout);
  }
}

void wake(Endpoint& endpoint) {
  if (auto* sim = dynamic_cast<SimEndpoint*>(&endpoint)) sim->stir();
}

WireBytes wire_bytes_sent(const Endpoint& endpoint) {
  const auto* sim = dynamic_cast<const SimEndpoint*>(&endpoint);
  return sim != nullptr ? sim->wire_sent_ : WireBytes{};
}

double transport_cpu_ns(const Endpoint& endpoint) {
  const auto* sim = dynamic_cast<const SimEndpoint*>(&endpoint);
  return sim != nullptr ? sim->charged_ns_ : 0;
}

std::int64_t simulator_cpu_ns(const Endpoint& endpoint) {
  const auto* sim = dynamic_cast<const SimEndpoint*>(&endpoint);
  return sim != nullptr ? sim->simulator_ns_ : 0;
}

}  // namespace daqflow::transport::sim

namespace daqflow::transport {

Result<std::unique_ptr<Transport>> make_sim_transport(const AddressTable& addresses,
                                                      const SimOptions& options,
                                                      const std::string& run_tag) {
  if (!simgrid::s4u::Engine::is_initialized()) {
    return Error(
        "transport 'sim' runs inside a simulation only: `daqflow sim` runs a configuration on "
        "a simulated platform");
  }
  auto network = std::make_shared<sim::Network>(addresses, options);
  const std::string prefix = "daqflow/" + run_tag + "/" + std::to_string(++sim::g_networks) + "/";
  for (std::size_t i = 0; i < addresses.size(); ++i) {
    network->mailboxes.push_back(simgrid::s4u::Mailbox::by_name(prefix + std::to_string(i)));
  }
  return std::unique_ptr<Transport>(std::make_unique<sim::SimTransport>(std::move(network)));
}

}  // namespace daqflow::transport
