#include "ucx_endpoint.hpp"

#include <poll.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <string>

#include "daqflow/core/clock.hpp"
#include "daqflow/core/log.hpp"
#include "daqflow/wire/crc32c.hpp"
#include "transport/detail/endpoint_common.hpp"
#include "transport/detail/message_checks.hpp"
#include "ucx_protocol.hpp"

namespace daqflow::transport::ucx {
namespace {

// Progress calls per poll(): enough to drain a burst, bounded so that completions go out.
constexpr int kMaxProgressRounds = 16;
// While arrivals wait for receive buffers, wait() looks at the pool this often: the application
// may drop buffers on another thread, which cannot wake the worker.
constexpr std::chrono::microseconds kStalledPollInterval{1000};

void send_done_callback(void* request, ucs_status_t status, void* user_data) {
  auto* slot = static_cast<SendSlot*>(user_data);
  // A slot whose message was dropped (peer failed) may be reused: only its own request counts.
  if (slot->request == request) {
    slot->request = nullptr;
    slot->owner->on_send_done(*slot, status);
  }
  ucp_request_free(request);
}

}  // namespace

ucs_status_t active_message_callback(void* arg, const void* header, std::size_t header_length,
                                     void* data, std::size_t length,
                                     const ucp_am_recv_param_t* param) {
  return static_cast<UcxEndpoint*>(arg)->on_active_message(header, header_length, data, length,
                                                           param);
}

UcxEndpoint::UcxEndpoint(const AddressTable& addresses, const EndpointOptions& options,
                         std::shared_ptr<Context> context, std::shared_ptr<void> registration)
    : addresses_(addresses),
      options_(options),
      context_(std::move(context)),
      registration_(std::move(registration)),
      peers_(addresses.size()),
      arrivals_(options.recv_buffers + 64),
      arrival_limit_(options.recv_buffers + 64),
      events_(addresses.size() * 2 + 64) {
  stats_.set_peer_count(peers_.size());
  done_.reserve(peers_.size());
  retries_.resize(peers_.size());
  replies_.reserve(peers_.size());
}

UcxEndpoint::~UcxEndpoint() {
  close(std::chrono::milliseconds(2000));
  core::retire_pool(pool_, core::BusyPool::leak, detail::endpoint_name("ucx", addresses_, self()));
}

Result<void> UcxEndpoint::start() {
  const AppAddress& me = addresses_[self()];
  const std::string who = "ucx endpoint of application '" + me.id + "'";
  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE | UCP_WORKER_PARAM_FIELD_NAME;
  // One thread at a time (Endpoint's contract), possibly not the one that created it.
  wp.thread_mode = UCS_THREAD_MODE_SERIALIZED;
  wp.name = me.id.c_str();
  ucs_status_t status = ucp_worker_create(context_->get(), &wp, &worker_);
  if (status != UCS_OK) {
    worker_ = nullptr;
    return Error(ErrorCode::unavailable,
                 who + ": cannot create a UCP worker: " + ucs_status_string(status));
  }
  status = ucp_worker_get_efd(worker_, &event_fd_);
  if (status != UCS_OK) {
    return Error(ErrorCode::internal,
                 who + ": UCP worker has no event fd: " + ucs_status_string(status));
  }
  ucp_am_handler_param_t handler{};
  handler.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_FLAGS |
                       UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG;
  handler.id = kAmId;
  handler.flags = UCP_AM_FLAG_WHOLE_MSG | UCP_AM_FLAG_PERSISTENT_DATA;
  handler.cb = active_message_callback;
  handler.arg = this;
  status = ucp_worker_set_am_recv_handler(worker_, &handler);
  if (status != UCS_OK) {
    return Error(ErrorCode::internal,
                 who + ": cannot set the active-message handler: " + ucs_status_string(status));
  }
  auto pool = make_mapped_pool(context_, me.id + ".ucx-receive",
                               std::max<std::uint32_t>(options_.max_message_size, 1),
                               options_.recv_buffers, pool_region_);
  if (!pool) return pool.error().context(who);
  pool_ = std::move(*pool);
  known_pools_.push_back({pool_.get(), pool_region_, pool_region_->memh()});
  if (me.data_port != 0) {
    auto listening = listen();
    if (!listening) return listening.error().context(who);
  }
  started_ = true;
  caretaker_ = std::thread([this] { care(); });
  return ok();
}

Result<std::unique_ptr<core::BufferPool>> UcxEndpoint::make_send_pool(std::string name,
                                                                      std::size_t buffer_size,
                                                                      std::size_t count) {
  std::lock_guard lock(mutex_);
  std::shared_ptr<MappedRegion> region;
  auto pool = make_mapped_pool(context_, std::move(name), buffer_size, count, region);
  if (!pool)
    return pool.error().context("ucx endpoint of application '" + addresses_[self()].id +
                                "': send pool");
  std::erase_if(known_pools_, [](const KnownPool& k) { return k.region.expired(); });
  known_pools_.push_back({pool->get(), region, region->memh()});
  return pool;
}

ucp_mem_h UcxEndpoint::memh_of(const core::Buffer& buffer) const {
  const core::BufferPool* pool = buffer.pool();
  for (const KnownPool& k : known_pools_) {
    if (k.pool == pool && !k.region.expired()) return k.memh;
  }
  return nullptr;
}

bool UcxEndpoint::connected(AppIndex index) const {
  std::lock_guard lock(mutex_);
  return index < peers_.size() && peers_[index].state == Peer::State::open;
}

std::size_t UcxEndpoint::in_flight(AppIndex index) const {
  std::lock_guard lock(mutex_);
  return index < peers_.size() ? peers_[index].count : 0;
}

SendStatus UcxEndpoint::post_send(AppIndex index, Message& message) {
  std::lock_guard lock(mutex_);
  const auto [checked, size] = detail::check_post(closed_ || closing_, index, peers_.size(),
                                                  message, options_.max_message_size);
  if (checked != SendStatus::ok) return checked;
  Peer& p = peers_[index];
  if (const SendStatus s = detail::send_status(p.state); s != SendStatus::ok) return s;
  if (p.send == nullptr) return SendStatus::not_connected;
  if (p.count == p.slots.size()) {
    stats_.back_pressure(index);
    return SendStatus::back_pressure;
  }
  SendSlot& s = p.slots[(p.head + p.count) % p.slots.size()];
  const wire::MessageHeader h =
      detail::data_header(message, self(), index, p.next_send_sequence, size, options_.payload_crc);
  std::size_t pieces = 0;
  for (const Segment& seg : message.pieces()) {
    if (seg.length == 0) continue;
    s.iov[pieces].buffer = seg.bytes().data();
    s.iov[pieces].length = seg.length;
    ++pieces;
  }
  wire::encode(h, s.header);

  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  param.cb.send = send_done_callback;
  param.user_data = &s;
  const void* data = nullptr;
  std::size_t count = 0;
  if (pieces == 1) {
    data = s.iov[0].buffer;
    count = s.iov[0].length;
    for (const Segment& seg : message.pieces()) {
      if (seg.length == 0) continue;
      if (ucp_mem_h memh = memh_of(seg.buffer); memh != nullptr) {
        param.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMH;
        param.memh = memh;
      }
    }
  } else if (pieces > 1) {
    param.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE;
    param.datatype = ucp_dt_make_iov();
    data = s.iov.data();
    count = pieces;
  }
  void* request =
      ucp_am_send_nbx(p.send->ep, kAmId, s.header.data(), s.header.size(), data, count, &param);
  if (UCS_PTR_IS_ERR(request)) {
    fail_peer(index, ucs_status_string(UCS_PTR_STATUS(request)));
    return SendStatus::closed;
  }
  ++p.next_send_sequence;
  s.message = std::move(message);
  message.clear();
  s.sequence = h.sequence;
  s.size = size;
  s.status = UCS_OK;
  ++p.count;
  if (request == nullptr) {
    s.request = nullptr;
    on_send_done(s, UCS_OK);
  } else {
    s.request = request;
    s.done = false;
  }
  return SendStatus::ok;
}

void UcxEndpoint::on_send_done(SendSlot& slot, ucs_status_t status) {
  slot.done = true;
  slot.status = status;
  Peer& p = peers_[slot.peer];
  if (!p.listed) {
    p.listed = true;
    done_.push_back(slot.peer);
  }
}

std::size_t UcxEndpoint::poll(std::span<Completion> out) {
  std::lock_guard lock(mutex_);
  activity_.fetch_add(1, std::memory_order_relaxed);
  detail::Emitter emit(out, events_);
  if (closed_ || !started_) return emit.produced();
  tend();
  emit_sends(emit);
  emit_arrivals(emit);
  return emit.produced();
}

void UcxEndpoint::tend() {
  attach_buffers();
  if (may_progress()) progress();
  if (!requests_.empty()) accept_pending();
  if (!welcomes_.empty()) send_welcomes();
  if (!dialing_.empty()) check_welcomes();
  attach_buffers();
  if (!failed_.empty() && (drained_ || !may_progress())) apply_failures();
  if (!replies_.empty()) send_replies();
  if (!retries_.empty()) {
    // A peer that reached us meanwhile is not dialled again.
    retries_.run_due(core::monotonic_ns(), [this](AppIndex peer) {
      if (peers_[peer].state == Peer::State::connecting) start_dial(peer);
    });
  }
  reap();
}

bool UcxEndpoint::may_progress() const {
  // Arrivals waiting for a buffer hold the worker still: that is the back-pressure. Rendezvous
  // data on its way needs progress, though, or the buffers it holds would never come back.
  if (waiting_ > 0 && receiving_ == 0) return false;
  // Enough for the application to take first (only if it can: the front is complete).
  if (arrivals_.size() >= arrival_limit_) {
    const auto state = arrivals_.front().state;
    if (state == Arrival::State::ready || state == Arrival::State::dropped) return false;
  }
  return true;
}

void UcxEndpoint::care() {
  // While it tends the worker, the caretaker wakes on the worker's events or every kTick. While
  // the owner is active it only looks in, less often the longer the owner stays busy: each look
  // wakes this thread, which preempts whatever runs on its CPU, often the owner itself (a source
  // streaming 1 MiB messages over tcp was preempted ~1000 times a second at a fixed 2 ms).
  constexpr std::chrono::microseconds kTick{2000};
  constexpr std::chrono::microseconds kLongestLook{16000};
  constexpr int kMaxBusyRounds = 16;
  std::uint64_t seen = activity_.load(std::memory_order_relaxed);
  std::chrono::microseconds look = kTick;
  int busy_rounds = 0;
  while (!stop_.load(std::memory_order_acquire)) {
    const std::uint64_t now = activity_.load(std::memory_order_relaxed);
    const bool quiet = now == seen && !owner_waiting_.load(std::memory_order_relaxed);
    seen = now;
    ucs_status_t armed = UCS_ERR_NO_PROGRESS;
    if (quiet) {
      look = kTick;
      std::lock_guard lock(mutex_);
      if (closing_ || closed_) return;
      tend();
      if (may_progress()) armed = ucp_worker_arm(worker_);
    } else {
      look = std::min(look * 2, kLongestLook);
    }
    if (armed == UCS_ERR_BUSY && ++busy_rounds < kMaxBusyRounds) continue;
    busy_rounds = 0;
    pollfd fd{event_fd_, POLLIN, 0};
    const timespec ts{0, static_cast<long>(look.count()) * 1000};
    ::ppoll(&fd, armed == UCS_OK ? 1 : 0, &ts, nullptr);
  }
}

void UcxEndpoint::stop_caretaker() {
  stop_.store(true, std::memory_order_release);
  if (caretaker_.joinable()) caretaker_.join();
}

bool UcxEndpoint::progress() {
  unsigned n = 0;
  int rounds = 0;
  // An arrival waiting for a buffer ends the loop unless the pool is known to be empty: for a
  // rendezvous, attaching the buffer is what sends the sender its go-ahead, which should not wait
  // for the rest of a burst.
  do {
    n = ucp_worker_progress(worker_);
  } while (n != 0 && ++rounds < kMaxProgressRounds && arrivals_.size() < arrival_limit_ &&
           (waiting_ == 0 || stalled_));
  drained_ = n == 0;
  return rounds > 0 || n != 0;
}

bool UcxEndpoint::has_output() const {
  if (!events_.empty() || !done_.empty() || !failed_.empty() || !requests_.empty() ||
      !replies_.empty() || !welcomes_.empty()) {
    return true;
  }
  if (arrivals_.empty()) return false;
  const auto state = arrivals_.front().state;
  return state == Arrival::State::ready || state == Arrival::State::dropped;
}

void UcxEndpoint::wait(std::chrono::microseconds timeout) {
  {
    std::unique_lock lock(mutex_);
    activity_.fetch_add(1, std::memory_order_relaxed);
    if (closed_ || !started_ || has_output()) return;
    if (!may_progress()) {
      if (waiting_ == 0 || receiving_ > 0 || pool_->in_use() < pool_->count()) return;
      // Stalled: only the application can end it, by dropping buffers (no fd says when).
      lock.unlock();
      timeout = std::min(timeout, kStalledPollInterval);
      const timespec ts{0, static_cast<long>(timeout.count()) * 1000};
      ::ppoll(nullptr, 0, &ts, nullptr);
      return;
    }
    timeout = retries_.cap_wait(timeout, core::monotonic_ns());
    if (timeout.count() == 0) return;
    // Events that arrived since the last progress would not wake the fd again: progress first.
    if (ucp_worker_progress(worker_) != 0) {
      // A peer taken meanwhile is answered before the application can send to it.
      if (!welcomes_.empty()) send_welcomes();
      return;
    }
    if (ucp_worker_arm(worker_) == UCS_ERR_BUSY) return;
    owner_waiting_.store(true, std::memory_order_relaxed);
  }
  pollfd fd{event_fd_, POLLIN, 0};
  const timespec ts{static_cast<time_t>(timeout.count() / 1'000'000),
                    static_cast<long>(timeout.count() % 1'000'000) * 1000};
  ::ppoll(&fd, 1, &ts, nullptr);
  owner_waiting_.store(false, std::memory_order_relaxed);
  activity_.fetch_add(1, std::memory_order_relaxed);
}

void UcxEndpoint::sleep_on_worker(std::chrono::microseconds timeout) {
  if (ucp_worker_progress(worker_) != 0) return;
  if (ucp_worker_arm(worker_) == UCS_ERR_BUSY) return;
  pollfd fd{event_fd_, POLLIN, 0};
  const timespec ts{static_cast<time_t>(timeout.count() / 1'000'000),
                    static_cast<long>(timeout.count() % 1'000'000) * 1000};
  ::ppoll(&fd, 1, &ts, nullptr);
}

void UcxEndpoint::emit_sends(detail::Emitter& emit) {
  for (std::size_t k = 0; k < done_.size();) {
    const AppIndex index = done_[k];
    Peer& p = peers_[index];
    while (p.count > 0 && emit.room()) {
      SendSlot& s = p.slots[p.head];
      if (!s.done) break;
      if (s.status != UCS_OK) {
        fail_peer(index, ucs_status_string(s.status));
        break;
      }
      stats_.sent(index, s.size);
      emit.send_done(index, s.sequence, s.size, s.message.type, s.message.flags, s.message.tag);
      s.message.clear();
      s.done = false;
      p.head = (p.head + 1) % p.slots.size();
      --p.count;
    }
    const bool more = p.count > 0 && p.slots[p.head].done;
    if (more) {
      ++k;  // the caller's array is full: the next poll() goes on
    } else {
      p.listed = false;
      done_[k] = done_.back();
      done_.pop_back();
    }
  }
}

}  // namespace daqflow::transport::ucx
