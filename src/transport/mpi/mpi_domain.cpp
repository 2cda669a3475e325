#include "mpi_domain.hpp"

#include <string>

#include "daqflow/core/clock.hpp"

namespace daqflow::transport::mpi {
namespace {

// Header receives kept posted per endpoint; more headers wait in MPI's unexpected queue, bounded
// by the senders' pipeline depths.
constexpr int kHeaderReceives = 16;
// Inbound slots beyond the receive pool's buffers, for payloads that are received only to be
// dropped (closed endpoint, refused message).
constexpr int kDiscardSlots = 4;
// How long shut() waits for requests that cannot be cancelled.
constexpr std::int64_t kShutWaitNs = 2'000'000'000;

}  // namespace

Domain::Domain(std::vector<int> rank_of, Polling polling)
    : rank_of_(std::move(rank_of)),
      tags_(static_cast<std::uint32_t>(rank_of_.size())),
      polling_(polling),
      locals_(rank_of_.size()) {}

Domain::~Domain() = default;

Result<void> Domain::open() {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  void* attribute = nullptr;
  int found = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &attribute, &found);
  const std::uint64_t tag_ub =
      found != 0 ? static_cast<std::uint64_t>(*static_cast<int*>(attribute)) : 32767;
  if (tags_.largest() > tag_ub) {
    return Error(ErrorCode::unavailable, "mpi: " + std::to_string(rank_of_.size()) +
                                             " applications need tags up to " +
                                             std::to_string(tags_.largest()) +
                                             " but this MPI allows " + std::to_string(tag_ub));
  }
  // A process of its own may hold several transports at once (tests): each gets its own
  // communicator so that their tags never meet. Under mpirun a duplicate of MPI_COMM_WORLD would
  // be a collective call that could wait for a rank that never comes, so the world is used as is.
  if (size == 1) {
    if (MPI_Comm_dup(MPI_COMM_SELF, &comm_) != MPI_SUCCESS) {
      return Error(ErrorCode::internal, "mpi: cannot duplicate MPI_COMM_SELF");
    }
    own_comm_ = true;
  } else {
    comm_ = MPI_COMM_WORLD;
  }
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  return ok();
}

void Domain::attach(AppIndex self, std::shared_ptr<Channel> channel) {
  if (comm_ == MPI_COMM_NULL) {
    // MPI is not there (the engine's failure says why): nothing will ever be held.
    channel->released.store(true, std::memory_order_release);
    return;
  }
  auto& slot = locals_[self];
  if (slot == nullptr) {
    slot = std::make_unique<Local>();
    slot->self = self;
    slot->header_buffers.resize(kHeaderReceives);
    slot->header_requests.assign(kHeaderReceives, MPI_REQUEST_NULL);
    slot->header_statuses.resize(kHeaderReceives);
    for (int i = 0; i < kHeaderReceives; ++i) {
      MPI_Irecv(slot->header_buffers[i].data(), wire::kHeaderSize, MPI_BYTE, MPI_ANY_SOURCE,
                tags_.header(self), comm_, &slot->header_requests[i]);
    }
    active_.push_back(slot.get());
    start_local(*slot, std::move(channel));
    return;
  }
  // The previous endpoint's drain finishes first (maybe_release starts the new one).
  slot->next = std::move(channel);
  maybe_release(*slot);
}

void Domain::start_local(Local& local, std::shared_ptr<Channel> channel) {
  local.state = Local::State::live;
  local.peers.clear();
  local.peers.resize(rank_of_.size());
  local.busy.clear();
  local.pool_dry = false;
  const int capacity = static_cast<int>(channel->options.recv_buffers) + kDiscardSlots;
  local.posted.clear();
  local.posted.resize(capacity);
  local.posted_requests.assign(capacity, MPI_REQUEST_NULL);
  local.posted_statuses.resize(capacity);
  local.posted_head = 0;
  local.posted_count = 0;
  local.channel = std::move(channel);
}

bool Domain::has_work() const {
  for (const Local* local : active_) {
    if (local->state == Local::State::live && !local->channel->work.empty()) return true;
  }
  return false;
}

std::size_t Domain::progress() {
  std::size_t work = 0;
  if (!controls_.empty()) test_controls();
  for (Local* local : active_) work += progress_local(*local);
  return work;
}

std::size_t Domain::progress_local(Local& local) {
  std::size_t work = 0;
  if (local.state == Local::State::live) work += take_work(local);
  if (!local.busy.empty()) work += complete_sends(local);
  work += complete_headers(local);
  if (!local.stalled.empty()) work += post_inbound(local);
  if (local.posted_count > 0) work += deliver_inbound(local);
  if (local.channel != nullptr && !local.overflow.empty()) {
    while (!local.overflow.empty() &&
           local.channel->events.try_push(std::move(local.overflow.front()))) {
      local.overflow.pop_front();
    }
  }
  if (local.state == Local::State::closing) finish_closing(local);
  if (local.state == Local::State::dead && local.channel != nullptr) maybe_release(local);
  if (local.state == Local::State::dead && local.next != nullptr) maybe_release(local);
  if (work > 0 && local.channel != nullptr) {
    detail::full_fence();
    local.channel->endpoint_bell.ring();
  }
  return work;
}

void Domain::finish_closing(Local& local) {
  if (!local.busy.empty() && core::monotonic_ns() < local.close_deadline_ns) return;
  // Everything sent (or the time is up): say goodbye after the data, on the same tag.
  for (AppIndex p = 0; p < local.peers.size(); ++p) {
    PeerLink& link = local.peers[p];
    if (link.state == PeerLink::State::open || link.state == PeerLink::State::hello_sent) {
      send_control(local, p, wire::MessageType::bye, kBye);
      link.state = PeerLink::State::closed;
    }
  }
  local.state = Local::State::dead;
}

void Domain::maybe_release(Local& local) {
  if (!local.busy.empty() || local.posted_count > 0 || !local.stalled.empty()) return;
  if (local.channel != nullptr) {
    local.overflow.clear();
    local.held.reset();
    local.channel->released.store(true, std::memory_order_release);
    detail::full_fence();
    local.channel->endpoint_bell.ring();
    local.channel.reset();
  }
  if (local.next != nullptr) start_local(local, std::move(local.next));
}

void Domain::emit(Local& local, Event&& event) {
  if (local.state != Local::State::live || local.channel == nullptr) return;
  if (!local.overflow.empty() || !local.channel->events.try_push(std::move(event))) {
    local.overflow.push_back(std::move(event));
  }
}

void Domain::shut() {
  if (comm_ == MPI_COMM_NULL) return;
  for (Local* local : active_) {
    for (MPI_Request& r : local->header_requests) {
      if (r != MPI_REQUEST_NULL) MPI_Cancel(&r);
    }
    for (int i = 0; i < local->posted_count; ++i) {
      MPI_Request& r = local->posted_requests[(local->posted_head + i) % local->posted.size()];
      if (r != MPI_REQUEST_NULL) MPI_Cancel(&r);
    }
  }
  // Cancelled receives complete at once; sends complete when their receivers take them.
  const std::int64_t deadline = core::monotonic_ns() + kShutWaitNs;
  auto settle = [&](std::vector<MPI_Request>& requests) {
    for (MPI_Request& r : requests) {
      while (r != MPI_REQUEST_NULL && core::monotonic_ns() < deadline) {
        int flag = 0;
        MPI_Test(&r, &flag, MPI_STATUS_IGNORE);
      }
      if (r != MPI_REQUEST_NULL) MPI_Request_free(&r);
    }
  };
  for (Local* local : active_) {
    settle(local->header_requests);
    settle(local->posted_requests);
    for (PeerLink& link : local->peers) {
      if (link.sends != nullptr) settle(link.sends->requests);
    }
  }
  for (ControlSend& c : controls_) {
    std::vector<MPI_Request> one{c.request};
    settle(one);
  }
  controls_.clear();
  for (Local* local : active_) {
    if (local->channel != nullptr) {
      local->channel->released.store(true, std::memory_order_release);
      detail::full_fence();
      local->channel->endpoint_bell.ring();
    }
  }
  active_.clear();
  locals_.clear();
  if (own_comm_) MPI_Comm_free(&comm_);
  comm_ = MPI_COMM_NULL;
}

}  // namespace daqflow::transport::mpi
