// The sim transport's network (sim_endpoint.hpp: Network): every endpoint's mailbox and credits,
// the parcels in flight, and the fifo model's routes and links.

#include <cmath>
#include <simgrid/s4u/Engine.hpp>
#include <xbt/config.hpp>

#include "transport/sim/sim_endpoint.hpp"
#include "transport/sim/sim_simgrid.hpp"

namespace daqflow::transport::sim {

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

}  // namespace daqflow::transport::sim
