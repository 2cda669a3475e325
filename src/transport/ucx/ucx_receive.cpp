// The ucx endpoint's receive path: active messages in, receive buffers attached in arrival
// order, rendezvous data fetched, completions out in order.

#include <cstring>

#include "daqflow/wire/crc32c.hpp"
#include "ucx_endpoint.hpp"
#include "ucx_protocol.hpp"

namespace daqflow::transport::ucx {
namespace {

void receive_done_callback(void* request, ucs_status_t status, std::size_t, void* user_data) {
  std::uint64_t id = 0;
  std::memcpy(&id, request, sizeof id);
  static_cast<UcxEndpoint*>(user_data)->on_receive_done(id, request, status);
  ucp_request_free(request);
}

}  // namespace

ucs_status_t UcxEndpoint::on_active_message(const void* header, std::size_t header_length,
                                            void* data, std::size_t length,
                                            const ucp_am_recv_param_t* param) {
  wire::MessageHeader h;
  const wire::DecodeStatus why = wire::decode(
      {static_cast<const std::byte*>(header), header_length}, options_.max_message_size, h);
  std::string_view problem;
  if (why == wire::DecodeStatus::ok && h.type == wire::MessageType::hello &&
      !detail::same_run(h, options_.run)) {
    // Another run's: its application indexes are those of another address table.
    refuse_stranger(h, param);
    return UCS_OK;
  }
  if (why != wire::DecodeStatus::ok) {
    problem = wire::to_string(why);
  } else if (h.source >= peers_.size() || h.destination != self()) {
    problem = "message header names the wrong applications";
  } else if (h.payload_size != length) {
    problem = "message size differs from its header";
  }
  if (!problem.empty()) {
    stats_.rejected.add_single_writer();
    const AppIndex from =
        why == wire::DecodeStatus::ok && h.source < peers_.size() ? h.source : wire::kNoApplication;
    if (from != wire::kNoApplication) {
      fail_peer(from, problem);
    } else if (!closing_) {
      stats_.peer_errors.add_single_writer();
      Completion event;
      event.kind = Completion::Kind::error;
      event.peer = wire::kNoApplication;
      event.reason = problem;
      (void)events_.push(std::move(event));
    }
    return UCS_OK;
  }
  if (h.type == wire::MessageType::hello) {
    on_hello(h.source, param);
    return UCS_OK;
  }
  if (h.type == wire::MessageType::bye) {
    on_bye(h.source, param);
    return UCS_OK;
  }
  Peer& p = peers_[h.source];
  // Closing: nothing is delivered any more. A failed or closed peer's late messages are dropped.
  if (closing_ || p.state == Peer::State::closed || p.state == Peer::State::failed) return UCS_OK;
  if (p.state == Peer::State::idle) {
    stats_.rejected.add_single_writer();
    fail_peer(h.source, "message before hello");
    return UCS_OK;
  }
  if (h.sequence != p.next_recv_sequence) {
    stats_.rejected.add_single_writer();
    fail_peer(h.source, "message out of sequence");
    return UCS_OK;
  }
  ++p.next_recv_sequence;
  const std::uint64_t id = arrivals_.push();
  Arrival& a = arrivals_[id];
  a.peer = h.source;
  a.header = h;
  a.rndv = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0;
  if (length == 0) {
    // (A rendezvous of nothing: returning UCS_OK completes the sender's side.)
    finish_arrival(a);
    return UCS_OK;
  }
  // Buffers go to arrivals in order: one that waits must not be overtaken.
  if (!a.rndv && waiting_ == 0 && take_buffer(id)) {
    std::memcpy(a.buffer.data(), data, length);
    finish_arrival(a);
    return UCS_OK;
  }
  a.state = Arrival::State::waiting;
  if (waiting_++ == 0) first_waiting_ = id;
  if (a.rndv || (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_DATA) != 0) {
    a.data = data;
    return UCS_INPROGRESS;
  }
  // UCX cannot keep this one: copy it aside until a buffer is free (rare: only while stalled).
  const auto* bytes = static_cast<const std::byte*>(data);
  a.spill.assign(bytes, bytes + length);
  return UCS_OK;
}

bool UcxEndpoint::take_buffer(std::uint64_t id) {
  Arrival& a = arrivals_[id];
  if (a.header.payload_size == 0) return true;
  a.buffer = pool_->acquire();
  return static_cast<bool>(a.buffer);
}

void UcxEndpoint::attach_buffers() {
  if (waiting_ == 0) return;
  std::uint64_t id = std::max(first_waiting_, arrivals_.head_id());
  for (; waiting_ > 0 && id < arrivals_.tail_id(); ++id) {
    Arrival& a = arrivals_[id];
    if (a.state != Arrival::State::waiting) continue;
    if (!take_buffer(id)) {
      if (!stalled_) {
        stalled_ = true;
        stats_.recv_stalls.add_single_writer();
      }
      break;
    }
    --waiting_;
    if (a.rndv) {
      start_receive(id);
    } else {
      const std::size_t size = a.header.payload_size;
      if (a.data != nullptr) {
        std::memcpy(a.buffer.data(), a.data, size);
        ucp_am_data_release(worker_, a.data);
        a.data = nullptr;
      } else {
        std::memcpy(a.buffer.data(), a.spill.data(), size);
      }
      finish_arrival(a);
    }
  }
  first_waiting_ = id;
  if (waiting_ == 0) stalled_ = false;
}

void UcxEndpoint::start_receive(std::uint64_t id) {
  Arrival& a = arrivals_[id];
  ucp_request_param_t param{};
  param.op_attr_mask =
      UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_MEMH;
  param.cb.recv_am = receive_done_callback;
  param.user_data = this;
  param.memh = pool_region_->memh();
  void* desc = std::exchange(a.data, nullptr);  // UCX owns it from here, whatever happens
  void* request =
      ucp_am_recv_data_nbx(worker_, desc, a.buffer.data(), a.header.payload_size, &param);
  if (request == nullptr) {
    finish_arrival(a);
  } else if (UCS_PTR_IS_ERR(request)) {
    a.state = Arrival::State::dropped;
    a.buffer.reset();
    fail_peer(a.peer, ucs_status_string(UCS_PTR_STATUS(request)));
  } else {
    std::memcpy(request, &id, sizeof id);
    a.request = request;
    a.state = Arrival::State::receiving;
    ++receiving_;
  }
}

void UcxEndpoint::on_receive_done(std::uint64_t id, void* request, ucs_status_t status) {
  if (!arrivals_.contains(id)) return;
  Arrival& a = arrivals_[id];
  if (a.request != request) return;
  a.request = nullptr;
  if (a.state != Arrival::State::receiving) return;
  --receiving_;
  if (status != UCS_OK) {
    a.state = Arrival::State::dropped;
    a.buffer.reset();
    fail_peer(a.peer, ucs_status_string(status));
    return;
  }
  finish_arrival(a);
}

void UcxEndpoint::finish_arrival(Arrival& a) {
  const std::span<const std::byte> payload =
      a.buffer ? std::span<const std::byte>(a.buffer.data(), a.header.payload_size)
               : std::span<const std::byte>();
  const wire::DecodeStatus verified = wire::verify_payload(a.header, payload);
  if (verified != wire::DecodeStatus::ok) {
    a.state = Arrival::State::dropped;
    a.buffer.reset();
    stats_.rejected.add_single_writer();
    fail_peer(a.peer, wire::to_string(verified));
    return;
  }
  a.state = Arrival::State::ready;
}

void UcxEndpoint::emit_arrivals(detail::Emitter& emit) {
  while (!arrivals_.empty()) {
    Arrival& a = arrivals_.front();
    if (a.state == Arrival::State::dropped) {
      arrivals_.pop();
      continue;
    }
    if (a.state != Arrival::State::ready) return;
    Peer& p = peers_[a.peer];
    if (a.bye) {
      if (p.state == Peer::State::closing) {
        p.state = Peer::State::closed;
        Completion event;
        event.kind = Completion::Kind::peer_closed;
        event.peer = a.peer;
        (void)emit.event(std::move(event));
      }
      arrivals_.pop();
      continue;
    }
    const bool live = p.state == Peer::State::open || p.state == Peer::State::connecting ||
                      p.state == Peer::State::closing;
    if (!live) {
      arrivals_.pop();
      continue;
    }
    if (!emit.room()) return;
    Completion& r = emit.recv(a.peer, a.header);
    if (a.buffer) r.message.add(std::move(a.buffer), 0, a.header.payload_size);
    stats_.received(a.peer, a.header.payload_size);
    arrivals_.pop();
  }
}

void UcxEndpoint::release_arrivals() {
  // UCX's descriptors go back while the worker exists; buffers are dropped by pop().
  for (std::uint64_t id = arrivals_.head_id(); id < arrivals_.tail_id(); ++id) {
    Arrival& a = arrivals_[id];
    if (a.data != nullptr && worker_ != nullptr) ucp_am_data_release(worker_, a.data);
    a.data = nullptr;
    if (a.state == Arrival::State::waiting) a.state = Arrival::State::dropped;
  }
  waiting_ = 0;
  stalled_ = false;
}

}  // namespace daqflow::transport::ucx
