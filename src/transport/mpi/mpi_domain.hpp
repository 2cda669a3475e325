#pragma once
// The engine-side state of one mpi transport: its communicator, where each application lives, and
// for each endpoint on this rank its send queues, header receives and inbound messages (the mpila
// transport filter). Engine thread only.
//
// An endpoint's state here outlives the endpoint: once closed it stays as a drain that takes what
// peers still send to it (their synchronous sends complete only when received) and answers their
// hellos with bye, until the transport is destroyed or a new endpoint takes its place.

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "daqflow/wire/header.hpp"
#include "mpi_api.hpp"
#include "mpi_channel.hpp"
#include "mpi_protocol.hpp"
#include "mpi_requests.hpp"

namespace daqflow::transport::mpi {

using HeaderBytes = std::array<std::byte, wire::kHeaderSize>;

// A FIFO that grows (rarely, doubling) instead of refusing: messages whose header arrived while
// the receive pool was empty wait here; senders' pipeline depths bound how many.
template <typename T>
class GrowRing {
 public:
  [[nodiscard]] bool empty() const { return count_ == 0; }
  [[nodiscard]] std::size_t size() const { return count_; }
  T& front() { return slots_[head_]; }
  void push(T&& value) {
    if (count_ == slots_.size()) grow();
    slots_[(head_ + count_) % slots_.size()] = std::move(value);
    ++count_;
  }
  void pop() {
    slots_[head_] = T{};
    head_ = (head_ + 1) % slots_.size();
    --count_;
  }

 private:
  void grow() {
    std::vector<T> bigger(slots_.empty() ? 16 : slots_.size() * 2);
    for (std::size_t i = 0; i < count_; ++i)
      bigger[i] = std::move(slots_[(head_ + i) % slots_.size()]);
    slots_ = std::move(bigger);
    head_ = 0;
  }
  std::vector<T> slots_;
  std::size_t head_ = 0;
  std::size_t count_ = 0;
};

struct SendSlot {
  HeaderBytes header{};
  Message message;
  std::uint64_t sequence = 0;
  std::uint32_t size = 0;
  std::uint32_t epoch = 0;
};

// The sends in flight to one peer: a ring of pipeline_depth slots, two requests each (header,
// payload).
struct SendQueue {
  explicit SendQueue(std::uint32_t depth)
      : slots(depth), requests(2 * std::size_t{depth}, MPI_REQUEST_NULL), statuses(2 * depth) {}
  std::vector<SendSlot> slots;
  std::vector<MPI_Request> requests;
  std::vector<MPI_Status> statuses;
  std::uint32_t head = 0;
  std::uint32_t count = 0;
  [[nodiscard]] bool full() const { return count == slots.size(); }
};

struct PeerLink {
  enum class State : std::uint8_t { unknown, hello_sent, open, closed };
  State state = State::unknown;
  bool busy = false;  // in Local::busy
  std::unique_ptr<SendQueue> sends;
};

// A message whose header has arrived, in header order.
struct Inbound {
  enum class What : std::uint8_t { deliver, discard, closed, failed };
  What what = What::deliver;
  int rank = 0;
  wire::MessageHeader header;
  std::string_view reason;  // failed
  core::Buffer buffer;
  std::unique_ptr<std::byte[]> scratch;  // discard: the payload goes here and is dropped
};

struct Local {
  enum class State : std::uint8_t { live, closing, dead };
  State state = State::live;
  AppIndex self = 0;
  std::int64_t close_deadline_ns = 0;
  std::shared_ptr<Channel> channel;  // null once released
  std::shared_ptr<Channel> next;     // a new endpoint for this index, waiting for the drain
  std::vector<PeerLink> peers;
  std::vector<AppIndex> busy;  // peers with sends in flight
  std::optional<Work> held;    // a send whose peer's queue was full (after a reconnect)

  std::vector<HeaderBytes> header_buffers;
  std::vector<MPI_Request> header_requests;
  std::vector<MPI_Status> header_statuses;
  int header_head = 0;

  GrowRing<Inbound> stalled;  // not yet posted
  std::vector<Inbound> posted;
  std::vector<MPI_Request> posted_requests;
  std::vector<MPI_Status> posted_statuses;
  int posted_head = 0;
  int posted_count = 0;
  bool pool_dry = false;

  std::deque<Event> overflow;  // events the channel's ring had no room for
};

class Domain {
 public:
  // rank_of[a]: the rank hosting application a, or -1 when it does not use mpi.
  Domain(std::vector<int> rank_of, Polling polling);
  ~Domain();
  Domain(const Domain&) = delete;
  Domain& operator=(const Domain&) = delete;

  // Engine thread, after MPI_Init: sets up the communicator.
  Result<void> open();
  // Engine thread: an endpoint for application self on this rank.
  void attach(AppIndex self, std::shared_ptr<Channel> channel);
  // Engine thread: one pass over every endpoint; returns how much was done.
  std::size_t progress();
  // Requests in flight that need progress soon (not counting idle header receives).
  [[nodiscard]] bool busy() const { return in_flight_ > 0; }
  // Work an endpoint has queued for the engine (checked before the engine sleeps).
  [[nodiscard]] bool has_work() const;
  // Engine thread: cancels what can be cancelled, waits a bounded time for the rest, frees MPI.
  void shut();

 private:
  void start_local(Local& local, std::shared_ptr<Channel> channel);
  std::size_t progress_local(Local& local);
  std::size_t take_work(Local& local);
  bool post_send(Local& local, Work& work);
  void send_control(Local& local, AppIndex peer, wire::MessageType type, std::uint64_t tag);
  std::size_t complete_sends(Local& local);
  std::size_t complete_headers(Local& local);
  void on_header(Local& local, const HeaderBytes& bytes, const MPI_Status& status);
  std::size_t post_inbound(Local& local);
  std::size_t deliver_inbound(Local& local);
  void finish_closing(Local& local);
  void maybe_release(Local& local);
  void emit(Local& local, Event&& event);
  void test_controls();

  struct ControlSend {
    HeaderBytes header{};
    MPI_Request request = MPI_REQUEST_NULL;
  };

  std::vector<int> rank_of_;
  Tags tags_;
  Polling polling_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  bool own_comm_ = false;
  std::vector<std::unique_ptr<Local>> locals_;  // by application index; null when never attached
  std::vector<Local*> active_;                  // locals_ that exist
  std::deque<ControlSend> controls_;            // control headers in flight
  PollScratch scratch_;
  std::int64_t in_flight_ = 0;  // sends and payload receives posted, not completed
};

}  // namespace daqflow::transport::mpi
