// Connection set-up and loss for the ucx endpoint: the listener, dialing with retries, the hello
// that names the sender, goodbyes and failures.

#include <algorithm>
#include <string>

#include "daqflow/core/clock.hpp"
#include "daqflow/core/log.hpp"
#include "transport/detail/endpoint_common.hpp"
#include "ucx_endpoint.hpp"
#include "ucx_protocol.hpp"

namespace daqflow::transport::ucx {
namespace {

void connection_error_callback(void* arg, ucp_ep_h, ucs_status_t status) {
  auto* c = static_cast<Connection*>(arg);
  c->owner->on_connection_error(*c, status);
}

void connection_request_callback(ucp_conn_request_h request, void* arg) {
  static_cast<UcxEndpoint*>(arg)->on_connection_request(request);
}

void hello_done_callback(void* request, ucs_status_t status, void* user_data) {
  auto* c = static_cast<Connection*>(user_data);
  if (c->hello_request == request) {
    c->hello_request = nullptr;
    c->owner->on_hello_sent(*c, status);
  }
  ucp_request_free(request);
}

// user_data is where the request is kept: cleared when it is done.
void control_done_callback(void* request, ucs_status_t, void* user_data) {
  auto* kept = static_cast<void**>(user_data);
  if (*kept == request) *kept = nullptr;
  ucp_request_free(request);
}

ucs_sock_addr_t sock_addr(const detail::SocketAddress& address) {
  ucs_sock_addr_t out{};
  out.addr = reinterpret_cast<const sockaddr*>(&address.storage);
  out.addrlen = address.length;
  return out;
}

void encode_control(wire::MessageType type, AppIndex from, AppIndex to,
                    std::array<std::byte, wire::kHeaderSize>& out,
                    const RunIdentity* run = nullptr) {
  wire::MessageHeader h;
  h.type = type;
  h.source = from;
  h.destination = to;
  if (run != nullptr) detail::stamp_run(h, *run);
  wire::encode(h, out);
}

}  // namespace

Result<void> UcxEndpoint::listen() {
  const AppAddress& me = addresses_[self()];
  auto address = detail::resolve(me.host, me.data_port);
  if (!address) return address.error();
  ucp_listener_params_t params{};
  params.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
  params.sockaddr = sock_addr(*address);
  params.conn_handler.cb = connection_request_callback;
  params.conn_handler.arg = this;
  const ucs_status_t status = ucp_listener_create(worker_, &params, &listener_);
  if (status != UCS_OK) {
    listener_ = nullptr;
    return Error(ErrorCode::unavailable, "cannot listen on " + address->text + ": " +
                                             ucs_status_string(status) +
                                             " (is another process using the port?)");
  }
  return ok();
}

void UcxEndpoint::on_connection_request(ucp_conn_request_h request) {
  // Endpoints are created after progress returns, not inside UCX's callback.
  requests_.push_back(request);
}

void UcxEndpoint::accept_pending() {
  for (ucp_conn_request_h request : requests_) {
    if (closing_ || closed_) {
      ucp_listener_reject(listener_, request);
      continue;
    }
    auto c = std::make_unique<Connection>();
    c->owner = this;
    c->state = Connection::State::open;
    ucp_ep_params_t params{};
    params.field_mask = UCP_EP_PARAM_FIELD_CONN_REQUEST | UCP_EP_PARAM_FIELD_ERR_HANDLER |
                        UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    params.conn_request = request;
    ucp_conn_request_attr_t attr{};
    attr.field_mask = UCP_CONN_REQUEST_ATTR_FIELD_CLIENT_ADDR;
    const bool known = ucp_conn_request_query(request, &attr) == UCS_OK;
    const bool local =
        known && detail::is_this_host(reinterpret_cast<const sockaddr*>(&attr.client_address));
    c->from = known ? core::address_text(attr.client_address) : "an unknown address";
    params.err_mode = context_->err_mode(local);
    params.err_handler.cb = connection_error_callback;
    params.err_handler.arg = c.get();
    const ucs_status_t status = ucp_ep_create(worker_, &params, &c->ep);
    if (status != UCS_OK) {
      spdlog::warn("ucx endpoint of application '{}': cannot accept a connection: {}",
                   addresses_[self()].id, ucs_status_string(status));
      continue;
    }
    connections_.push_back(std::move(c));
  }
  requests_.clear();
}

Result<void> UcxEndpoint::connect(AppIndex index) {
  std::lock_guard lock(mutex_);
  const std::string me = detail::endpoint_name("ucx", addresses_, self());
  if (auto r = detail::check_connect(me, addresses_, index, closed_ || closing_); !r) return r;
  Peer& p = peers_[index];
  if (p.state == Peer::State::open || p.state == Peer::State::connecting) return ok();
  auto address = detail::peer_data_address(me, addresses_, index);
  if (!address) return address.error();
  reset_peer(index);
  p.address = std::move(*address);
  p.state = Peer::State::connecting;
  retries_.start(index, core::monotonic_ns());
  start_dial(index);
  return ok();
}

void UcxEndpoint::start_dial(AppIndex index) {
  Peer& p = peers_[index];
  retries_.cancel(index);
  auto owned = std::make_unique<Connection>();
  Connection& c = *owned;
  c.owner = this;
  c.peer = index;
  c.dialed = true;
  c.state = Connection::State::dialing;
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR |
                      UCP_EP_PARAM_FIELD_ERR_HANDLER | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
  params.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
  params.sockaddr = sock_addr(p.address);
  // The peer computes the same from our address when it accepts, so both ends agree.
  params.err_mode = context_->err_mode(
      detail::is_this_host(reinterpret_cast<const sockaddr*>(&p.address.storage)));
  params.err_handler.cb = connection_error_callback;
  params.err_handler.arg = &c;
  const ucs_status_t status = ucp_ep_create(worker_, &params, &c.ep);
  if (status != UCS_OK) {
    dial_failed(index, status);
    return;
  }
  connections_.push_back(std::move(owned));
  p.dial = &c;
  // The hello waits in UCX until the connection is up; the peer's answer (its own hello, the
  // welcome) says it took us for one of its run: only then does anything else go out on it.
  p.welcome_due_ns = core::monotonic_ns() + detail::ConnectBackoff::kGiveUpAfterNs;
  dialing_.push_back(index);
  send_hello(c, index);
}

void UcxEndpoint::send_hello(Connection& c, AppIndex to) {
  encode_control(wire::MessageType::hello, self(), to, c.hello, &options_.run);
  ucp_request_param_t param{};
  param.op_attr_mask =
      UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_FLAGS;
  param.cb.send = hello_done_callback;
  param.user_data = &c;
  param.flags = UCP_AM_SEND_FLAG_REPLY;
  void* request = ucp_am_send_nbx(c.ep, kAmId, c.hello.data(), c.hello.size(), nullptr, 0, &param);
  if (UCS_PTR_IS_ERR(request)) {
    on_connection_error(c, UCS_PTR_STATUS(request));
  } else if (request != nullptr) {
    c.hello_request = request;
  }
}

void UcxEndpoint::on_hello_sent(Connection& c, ucs_status_t status) {
  if (status != UCS_OK) on_connection_error(c, status);
}

void UcxEndpoint::on_connection_error(Connection& c, ucs_status_t status) {
  if (c.state == Connection::State::failed || c.state == Connection::State::dead) return;
  // Acted on after progress has delivered what arrived before the failure (apply_failures).
  c.error = status;
  c.state = Connection::State::failed;
  failed_.push_back(&c);
}

void UcxEndpoint::apply_failures() {
  for (Connection* c : failed_) {
    if (c->state != Connection::State::failed) continue;
    const AppIndex index = c->peer;
    const bool was_dial = index < peers_.size() && peers_[index].dial == c;
    close_connection(*c);
    if (index >= peers_.size()) continue;  // never said hello: nobody to tell
    Peer& p = peers_[index];
    if (was_dial && p.state == Peer::State::connecting) {
      dial_failed(index, c->error);
    } else if (c->established &&
               (p.state == Peer::State::open || p.state == Peer::State::connecting)) {
      fail_peer(index, ucs_status_string(c->error));
    }
  }
  failed_.clear();
}

void UcxEndpoint::dial_failed(AppIndex index, ucs_status_t status) {
  Peer& p = peers_[index];
  if (p.state != Peer::State::connecting) return;  // it connected to us meanwhile
  if (!retries_.failed(index, core::monotonic_ns())) fail_peer(index, ucs_status_string(status));
}

void UcxEndpoint::on_hello(AppIndex source, const ucp_am_recv_param_t* param) {
  if (closing_ || (param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) == 0) return;
  for (auto& c : connections_) {
    if (c->ep != param->reply_ep) continue;
    if (c->dialed) {
      // The welcome: the peer took us.
      if (c->state == Connection::State::dialing && c->peer == source) welcomed(*c);
      return;
    }
    if (c->state != Connection::State::open || c->peer != wire::kNoApplication || c->refused) {
      return;
    }
    associate(*c, source);
    // Answered with our own hello once progress has returned (not from UCX's callback).
    if (c->state == Connection::State::open) welcomes_.push_back(c.get());
    return;
  }
}

void UcxEndpoint::send_welcomes() {
  for (Connection* c : welcomes_) {
    if (c->state == Connection::State::open && c->peer < peers_.size()) send_hello(*c, c->peer);
  }
  welcomes_.clear();
}

// A dial whose welcome has not come in time (the peer refused it without closing it, or does
// not answer) fails like one that could not connect: it is retried while its peer's connect time
// lasts.
void UcxEndpoint::check_welcomes() {
  const std::int64_t now = core::monotonic_ns();
  for (std::size_t k = 0; k < dialing_.size();) {
    Peer& p = peers_[dialing_[k]];
    const bool waiting = p.dial != nullptr && p.dial->state == Connection::State::dialing;
    if (waiting && now < p.welcome_due_ns) {
      ++k;
      continue;
    }
    if (waiting) on_connection_error(*p.dial, UCS_ERR_TIMED_OUT);
    dialing_[k] = dialing_.back();
    dialing_.pop_back();
  }
}

void UcxEndpoint::welcomed(Connection& c) {
  Peer& p = peers_[c.peer];
  if (p.dial == &c) p.dial = nullptr;
  if (p.state == Peer::State::connecting || p.state == Peer::State::open) {
    associate(c, c.peer);
  } else {
    close_connection(c);
  }
}

// A hello from another run: its connection is closed, counted and said; nothing of it reaches
// the application.
void UcxEndpoint::refuse_stranger(const wire::MessageHeader& hello,
                                  const ucp_am_recv_param_t* param) {
  stats_.strangers.add_single_writer();
  Connection* from = nullptr;
  if ((param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) != 0) {
    for (auto& c : connections_) {
      const bool live =
          c->state == Connection::State::open || c->state == Connection::State::dialing;
      if (c->ep == param->reply_ep && live) from = c.get();
    }
  }
  std::string where = "an unknown address";
  if (from != nullptr) where = from->dialed ? peers_[from->peer].address.text : from->from;
  const std::string claimed =
      hello.source < addresses_.size() ? addresses_[hello.source].id : std::to_string(hello.source);
  strangers_.refused("ucx", addresses_[self()].id, where, claimed, detail::run_of(hello),
                     options_.run);
  // A dialed one (the welcome of an endpoint of another run) ends the attempt: it is retried,
  // and fails the peer when no endpoint of this run answers in time. An accepted one is never
  // answered: its dialer gives up on it.
  if (from == nullptr) return;
  if (from->dialed) {
    on_connection_error(*from, UCS_ERR_REJECTED);
  } else if (from->peer == wire::kNoApplication) {
    from->refused = true;
  }
}

void UcxEndpoint::associate(Connection& c, AppIndex index) {
  Peer& p = peers_[index];
  // A hello from an index we saw go away: a new endpoint of that application.
  if (p.state == Peer::State::closing || p.state == Peer::State::closed ||
      p.state == Peer::State::failed) {
    if (c.dialed) {
      close_connection(c);
      return;
    }
    reset_peer(index);
  }
  c.peer = index;
  c.state = Connection::State::open;
  c.established = true;
  if (p.slots.empty()) {
    p.slots.resize(options_.pipeline_depth);
    for (SendSlot& s : p.slots) {
      s.owner = this;
      s.peer = index;
    }
  }
  if (p.send == nullptr) p.send = &c;
  set_open(p, true);
  retries_.cancel(index);
}

void UcxEndpoint::on_bye(AppIndex source, const ucp_am_recv_param_t* param) {
  Peer& p = peers_[source];
  p.bye_received = true;
  if (!p.bye_sent && !p.reply_pending) {
    p.reply_pending = true;
    p.reply_ep =
        (param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) != 0 ? param->reply_ep : nullptr;
    replies_.push_back(source);
  }
  if (closing_) return;
  if (p.state != Peer::State::open && p.state != Peer::State::connecting) return;
  set_open(p, false);
  p.state = Peer::State::closing;
  clear_sends(p);  // it reads nothing more
  retries_.cancel(source);
  // peer_closed follows the messages that arrived before the bye.
  const std::uint64_t id = arrivals_.push();
  Arrival& a = arrivals_[id];
  a.peer = source;
  a.bye = true;
  a.state = Arrival::State::ready;
}

void UcxEndpoint::send_bye(AppIndex index, ucp_ep_h ep) {
  Peer& p = peers_[index];
  p.bye_sent = true;
  encode_control(wire::MessageType::bye, self(), index, p.bye);
  ucp_request_param_t param{};
  param.op_attr_mask =
      UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_FLAGS;
  param.cb.send = control_done_callback;
  param.user_data = &p.bye_request;
  param.flags = UCP_AM_SEND_FLAG_REPLY;
  void* request = ucp_am_send_nbx(ep, kAmId, p.bye.data(), p.bye.size(), nullptr, 0, &param);
  p.bye_request = UCS_PTR_IS_PTR(request) ? request : nullptr;
}

void UcxEndpoint::send_replies() {
  for (const AppIndex index : replies_) {
    Peer& p = peers_[index];
    if (!p.reply_pending) continue;
    p.reply_pending = false;
    if (p.bye_sent) continue;
    ucp_ep_h ep = nullptr;
    if (p.send != nullptr && p.send->state == Connection::State::open) {
      ep = p.send->ep;
    } else {
      for (auto& c : connections_) {
        if (c->ep == p.reply_ep && c->state == Connection::State::open) ep = c->ep;
      }
    }
    if (ep != nullptr) send_bye(index, ep);
  }
  replies_.clear();
}

void UcxEndpoint::fail_peer(AppIndex index, std::string_view reason) {
  Peer& p = peers_[index];
  for (auto& c : connections_) {
    if (c->peer == index) close_connection(*c);
  }
  if (p.state == Peer::State::closed || p.state == Peer::State::failed) return;
  set_open(p, false);
  p.state = Peer::State::failed;
  clear_sends(p);
  retries_.cancel(index);
  if (closing_ || closed_) return;
  stats_.peer_errors.add_single_writer();
  Completion event;
  event.kind = Completion::Kind::error;
  event.peer = index;
  event.reason = reason;
  (void)events_.push(std::move(event));
}

void UcxEndpoint::reset_peer(AppIndex index) {
  Peer& p = peers_[index];
  for (auto& c : connections_) {
    if (c->peer == index) close_connection(*c);
  }
  set_open(p, false);
  p.state = Peer::State::idle;
  clear_sends(p);
  p.next_send_sequence = 0;
  p.next_recv_sequence = 0;
  p.send = nullptr;
  p.dial = nullptr;
  retries_.cancel(index);
  p.bye_sent = false;
  p.bye_received = false;
  p.reply_pending = false;
  p.reply_ep = nullptr;
}

void UcxEndpoint::clear_sends(Peer& p) {
  // Requests still in UCX complete later; their callbacks find the slot no longer theirs.
  for (SendSlot& s : p.slots) {
    s.request = nullptr;
    s.message.clear();
    s.done = false;
  }
  p.head = 0;
  p.count = 0;
}

void UcxEndpoint::set_open(Peer& p, bool open) {
  if (open && p.state != Peer::State::open) {
    p.state = Peer::State::open;
    stats_.peer_opened();
  } else if (!open && p.state == Peer::State::open) {
    stats_.peer_closed();
  }
}

void UcxEndpoint::close_connection(Connection& c) {
  if (c.state == Connection::State::dead) return;
  if (c.peer < peers_.size()) {
    Peer& p = peers_[c.peer];
    if (p.send == &c) p.send = nullptr;
    if (p.dial == &c) p.dial = nullptr;
  }
  // The UCP endpoint is closed by reap(), outside UCX's callbacks.
  c.state = Connection::State::dead;
  has_dead_ = true;
}

void UcxEndpoint::reap() {
  if (!has_dead_) return;
  for (auto& c : connections_) {
    if (c->state != Connection::State::dead) continue;
    if (c->ep != nullptr) {
      ucp_request_param_t param{};
      param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
      param.flags = UCP_EP_CLOSE_FLAG_FORCE;
      void* request = ucp_ep_close_nbx(std::exchange(c->ep, nullptr), &param);
      if (UCS_PTR_IS_PTR(request)) c->close_request = request;
    }
    if (c->close_request != nullptr &&
        ucp_request_check_status(c->close_request) != UCS_INPROGRESS) {
      ucp_request_free(std::exchange(c->close_request, nullptr));
    }
  }
  // failed_ may still name dead connections: keep them until it has been worked through.
  if (!failed_.empty()) return;
  std::erase_if(connections_, [](const std::unique_ptr<Connection>& c) {
    return c->state == Connection::State::dead && c->ep == nullptr && c->close_request == nullptr &&
           c->hello_request == nullptr;
  });
  has_dead_ = std::any_of(connections_.begin(), connections_.end(),
                          [](const auto& c) { return c->state == Connection::State::dead; });
}

}  // namespace daqflow::transport::ucx
