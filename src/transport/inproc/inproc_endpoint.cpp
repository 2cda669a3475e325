#include "inproc_endpoint.hpp"

#include <algorithm>
#include <bit>
#include <string>

#include "transport/detail/endpoint_common.hpp"
#include "transport/detail/message_checks.hpp"
#include "transport/factories.hpp"

namespace daqflow::transport::inproc {
namespace {

constexpr std::size_t kMinInboundSlots = 64;
constexpr std::size_t kInboundSlotsPerDepth = 16;

void erase_value(std::vector<AppIndex>& list, AppIndex value) {
  std::erase(list, value);
}

class InprocTransport final : public Transport {
 public:
  explicit InprocTransport(const AddressTable& addresses)
      : addresses_(addresses), hub_(std::make_shared<Hub>(addresses.size())) {}

  [[nodiscard]] std::string_view name() const override { return "inproc"; }

  [[nodiscard]] Result<std::unique_ptr<Endpoint>> create_endpoint(
      const EndpointOptions& options) override {
    // Messages are handed over by reference: no receive buffers.
    auto checked = detail::check_endpoint_options("inproc", addresses_, options,
                                                  /*needs_recv_buffers=*/false);
    if (!checked) return checked.error();
    const std::string& who = *checked;
    auto signal = Signal::create();
    if (!signal) return signal.error().context(who);
    const std::size_t slots =
        std::max(kMinInboundSlots, std::size_t{options.pipeline_depth} * kInboundSlotsPerDepth);
    auto mailbox = std::make_shared<Mailbox>(options.self, slots, *signal);
    auto published = hub_->publish(mailbox);
    if (!published) return published.error().context(who);
    return std::unique_ptr<Endpoint>(std::make_unique<InprocEndpoint>(
        addresses_, hub_, options, std::move(*signal), std::move(mailbox)));
  }

 private:
  const AddressTable& addresses_;
  std::shared_ptr<Hub> hub_;
};

}  // namespace

InprocEndpoint::InprocEndpoint(const AddressTable& addresses, std::shared_ptr<Hub> hub,
                               const EndpointOptions& options, std::shared_ptr<Signal> signal,
                               std::shared_ptr<Mailbox> mailbox)
    : addresses_(addresses),
      hub_(std::move(hub)),
      options_(options),
      signal_(std::move(signal)),
      own_(std::move(mailbox)),
      peers_(hub_->applications()),
      events_(hub_->applications() * 2 + 16) {
  stats_.set_peer_count(peers_.size());
  busy_.reserve(peers_.size());
  linked_.reserve(peers_.size());
  waiting_.reserve(peers_.size());
  closing_.reserve(peers_.size());
  doorbells_.reserve(peers_.size());
  touched_.reserve(peers_.size());
  opened_scratch_.reserve(peers_.size());
  closed_scratch_.reserve(peers_.size());
}

InprocEndpoint::~InprocEndpoint() {
  shut(Closure::closed);
}

Result<void> InprocEndpoint::connect(AppIndex index) {
  if (auto r = detail::check_connect(detail::endpoint_name("inproc", addresses_, self()),
                                     addresses_, index, closed_);
      !r) {
    return r;
  }
  Peer& p = peers_[index];
  if (p.state == Peer::State::closed && p.reported) p = Peer{};
  if (!resolve(index) && p.state == Peer::State::idle && !p.waiting) {
    p.waiting = true;
    waiting_.push_back(index);
  }
  return ok();
}

bool InprocEndpoint::connected(AppIndex index) const {
  return index < peers_.size() && peers_[index].state == Peer::State::open;
}

bool InprocEndpoint::resolve(AppIndex index) {
  Peer& p = peers_[index];
  if (p.state == Peer::State::open) return true;
  if (p.state == Peer::State::closed) return false;
  const std::uint64_t generation = hub_->generation();
  if (p.tried_generation == generation) return false;
  p.tried_generation = generation;
  auto mailbox = hub_->find(index);
  if (mailbox == nullptr) return false;
  auto link = mailbox->attach(self(), signal_);
  // A mailbox closing right now: its successor, if any, publishes a new generation.
  if (link == nullptr) return false;
  p.sent.assign(options_.pipeline_depth, SentInfo{});
  p.mailbox = std::move(mailbox);
  p.link = std::move(link);
  p.state = Peer::State::open;
  p.posted = 0;
  p.reported_sends = 0;
  if (!p.linked) {
    p.linked = true;
    linked_.push_back(index);
  }
  stats_.peer_opened();
  return true;
}

SendStatus InprocEndpoint::post_send(AppIndex index, Message& message) {
  const auto [checked, size] =
      detail::check_post(closed_, index, peers_.size(), message, options_.max_message_size);
  if (checked != SendStatus::ok) return checked;
  Peer& p = peers_[index];
  if (p.state != Peer::State::open && !resolve(index)) {
    return p.state == Peer::State::closed ? SendStatus::closed : SendStatus::not_connected;
  }
  Mailbox& mailbox = *p.mailbox;
  if (mailbox.closure() != Closure::open) return SendStatus::closed;
  if (p.posted - p.reported_sends >= options_.pipeline_depth) {
    stats_.back_pressure(index);
    return SendStatus::back_pressure;
  }
  const std::uint64_t sequence = p.posted;
  const SentInfo info{sequence, message.tag, size, message.type};
  Delivery delivery{p.link.get(), sequence, size, std::move(message)};
  if (!mailbox.inbound().try_push(std::move(delivery))) {
    message = std::move(delivery.message);
    stats_.back_pressure(index);
    return SendStatus::back_pressure;
  }
  message.clear();
  if (mailbox.closure() != Closure::open && mailbox.drain(p.link.get(), sequence, &message)) {
    return SendStatus::closed;
  }
  // (A receiver closing at this very moment may miss this message in its drain: it is then lost
  // with the peer like every other unconsumed send, and released when this endpoint notes the
  // closure and drains the closed mailbox itself.)
  p.sent[sequence % options_.pipeline_depth] = info;
  p.posted = sequence + 1;
  p.link->posted.store(p.posted, std::memory_order_release);
  // The receiver is woken, if it sleeps, at our next poll() or wait(): one fence per batch
  // instead of one per message.
  if (!p.doorbell) {
    p.doorbell = true;
    doorbells_.push_back(index);
  }
  if (!p.busy) {
    p.busy = true;
    busy_.push_back(index);
  }
  return SendStatus::ok;
}

std::size_t InprocEndpoint::poll(std::span<Completion> out) {
  detail::Emitter emit(out, events_);
  if (closed_) return emit.produced();
  ring_doorbells();

  const std::uint64_t changes = signal_->changes();
  if (changes != seen_changes_) {
    seen_changes_ = changes;
    note_changes(emit);
  }
  if (!waiting_.empty()) {
    const std::uint64_t generation = hub_->generation();
    if (generation != seen_generation_) {
      seen_generation_ = generation;
      std::erase_if(waiting_, [this](AppIndex i) {
        if (!resolve(i) && peers_[i].state == Peer::State::idle) return false;
        peers_[i].waiting = false;
        return true;
      });
    }
  }

  // Sends the receivers have consumed, in order per peer.
  for (std::size_t k = 0; k < busy_.size();) {
    const AppIndex index = busy_[k];
    Peer& p = peers_[index];
    const std::uint64_t consumed = p.link->consumed.load(std::memory_order_acquire);
    while (p.reported_sends < consumed && emit.room()) {
      const SentInfo& s = p.sent[p.reported_sends % options_.pipeline_depth];
      emit.send_done(index, s.sequence, s.size, s.type, 0, s.tag);
      ++p.reported_sends;
      stats_.sent(index, s.size);
    }
    if (p.reported_sends == p.posted) {
      p.busy = false;
      busy_[k] = busy_.back();
      busy_.pop_back();
    } else {
      ++k;
    }
  }

  // Messages for us.
  Delivery d;
  while (emit.room() && own_->inbound().try_pop(d)) {
    Link& link = *d.link;
    Completion& c = emit.next();
    c.kind = Completion::Kind::recv;
    c.peer = link.sender;
    c.sequence = d.sequence;
    c.size = d.size;
    c.message = std::move(d.message);
    c.reason = {};
    link.consumed.store(link.consumed.load(std::memory_order_relaxed) + 1,
                        std::memory_order_release);
    if (!link.touched) {
      link.touched = true;
      touched_.push_back(&link);
    }
    stats_.received(link.sender, d.size);
  }

  if (!touched_.empty()) {
    // Senders that sleep while we consumed their messages: wake them, one fence for the batch.
    detail::full_fence();
    for (Link* link : touched_) {
      link->touched = false;
      link->sender_signal->notify_after_fence();
    }
    touched_.clear();
  }

  if (!closing_.empty()) finish_closing_links(emit);
  return emit.produced();
}

void InprocEndpoint::note_changes(detail::Emitter& emit) {
  // Peers' mailboxes first, then our links: a sender closes its links before its mailbox, so a
  // closed mailbox seen here guarantees that the scan below sees that sender's closed link and
  // its closure waits for its last deliveries.
  opened_scratch_.clear();
  std::vector<AppIndex>& newly_closed = closed_scratch_;
  newly_closed.clear();
  for (const AppIndex index : linked_) {
    Peer& p = peers_[index];
    if (p.state != Peer::State::open) continue;
    const Closure closure = p.mailbox->closure();
    if (closure == Closure::open) continue;
    p.state = Peer::State::closed;
    p.closure = std::max(p.closure, closure);
    drop_sends(p, index);
    newly_closed.push_back(index);
  }

  const std::size_t before = closing_.size();
  own_->scan(opened_scratch_, closing_);
  for (const AppIndex index : opened_scratch_) {
    // A new endpoint for an index whose previous one we saw close: talk to the new one.
    Peer& p = peers_[index];
    if (p.state == Peer::State::closed && p.reported) p = Peer{};
  }
  for (std::size_t k = before; k < closing_.size(); ++k) {
    Peer& p = peers_[closing_[k]->sender];
    ++p.draining;
    p.closure = std::max(p.closure, closing_[k]->sender_closure.load(std::memory_order_acquire));
  }
  for (const AppIndex index : newly_closed) report_closure(index, emit);
}

void InprocEndpoint::finish_closing_links(detail::Emitter& emit) {
  for (std::size_t k = 0; k < closing_.size();) {
    Link& link = *closing_[k];
    if (link.consumed.load(std::memory_order_relaxed) !=
        link.posted.load(std::memory_order_acquire)) {
      ++k;
      continue;
    }
    const AppIndex sender = link.sender;
    own_->detach(&link);
    closing_[k] = std::move(closing_.back());
    closing_.pop_back();
    Peer& p = peers_[sender];
    if (p.draining > 0) --p.draining;
    report_closure(sender, emit);
  }
}

void InprocEndpoint::report_closure(AppIndex index, detail::Emitter& emit) {
  Peer& p = peers_[index];
  if (p.reported || p.closure == Closure::open || p.draining > 0) return;
  p.reported = true;
  if (p.state == Peer::State::open) {
    p.state = Peer::State::closed;
    drop_sends(p, index);
  }
  p.state = Peer::State::closed;
  if (p.linked) {
    p.linked = false;
    erase_value(linked_, index);
    stats_.peer_closed();
  }
  // Messages we pushed while it was closing may still sit in its ring: release them.
  if (p.mailbox != nullptr && p.mailbox->closure() != Closure::open) p.mailbox->drain();
  p.mailbox.reset();
  p.link.reset();
  Completion c;
  c.peer = index;
  if (p.closure == Closure::aborted) {
    c.kind = Completion::Kind::error;
    c.reason = "peer aborted without bye";
    stats_.peer_errors.add_single_writer();
  } else {
    c.kind = Completion::Kind::peer_closed;
  }
  (void)emit.event(std::move(c));
}

void InprocEndpoint::drop_sends(Peer& p, AppIndex index) {
  p.reported_sends = p.posted;
  if (p.busy) {
    p.busy = false;
    erase_value(busy_, index);
  }
}

bool InprocEndpoint::has_work() const {
  if (!events_.empty() || !own_->inbound().empty()) return true;
  if (signal_->changes() != seen_changes_) return true;
  for (const AppIndex index : busy_) {
    const Peer& p = peers_[index];
    if (p.link->consumed.load(std::memory_order_acquire) > p.reported_sends) return true;
  }
  for (const auto& link : closing_) {
    if (link->consumed.load(std::memory_order_relaxed) ==
        link->posted.load(std::memory_order_acquire)) {
      return true;
    }
  }
  return !waiting_.empty() && hub_->generation() != seen_generation_;
}

void InprocEndpoint::wait(std::chrono::microseconds timeout) {
  if (closed_) return;
  ring_doorbells();
  signal_->sleep(timeout, [this] { return has_work(); });
}

void InprocEndpoint::ring_doorbells() {
  if (doorbells_.empty()) return;
  // Pairs with the fence in Signal::sleep(): either the receiver sees our messages before it
  // blocks, or we see that it sleeps and wake it.
  detail::full_fence();
  for (const AppIndex index : doorbells_) {
    Peer& p = peers_[index];
    p.doorbell = false;
    if (p.mailbox != nullptr) p.mailbox->signal().notify_after_fence();
  }
  doorbells_.clear();
}

std::size_t InprocEndpoint::in_flight(AppIndex index) const {
  if (index >= peers_.size()) return 0;
  const Peer& p = peers_[index];
  return static_cast<std::size_t>(p.posted - p.reported_sends);
}

void InprocEndpoint::close(std::chrono::milliseconds /*timeout*/) {
  // Nothing waits on our side: every posted message is already in its receiver's ring.
  shut(Closure::closed);
}

void InprocEndpoint::shut(Closure how) {
  if (closed_) return;
  closed_ = true;
  // Links before the mailbox: see note_changes().
  for (const AppIndex index : linked_) {
    Peer& p = peers_[index];
    if (p.link != nullptr) p.link->sender_closure.store(how, std::memory_order_release);
  }
  for (const AppIndex index : linked_) {
    Peer& p = peers_[index];
    if (p.mailbox == nullptr) continue;
    p.mailbox->signal().notify_change();
    if (p.mailbox->closure() != Closure::open) p.mailbox->drain();
  }
  hub_->withdraw(*own_);
  for (const auto& link : own_->close(how)) link->sender_signal->notify_change();
  closing_.clear();
  for (auto& p : peers_) {
    p.mailbox.reset();
    p.link.reset();
    p.state = Peer::State::closed;
  }
  busy_.clear();
  linked_.clear();
  waiting_.clear();
  doorbells_.clear();
  events_.clear();
  stats_.peers_connected.store(0, std::memory_order_relaxed);
}

}  // namespace daqflow::transport::inproc

namespace daqflow::transport {

std::unique_ptr<Transport> make_inproc_transport(const AddressTable& addresses) {
  return std::make_unique<inproc::InprocTransport>(addresses);
}

}  // namespace daqflow::transport
