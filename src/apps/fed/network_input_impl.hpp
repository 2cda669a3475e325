#pragma once
// The FED network input (contract in daqflow/apps/fed/network_input.hpp).
// network_input.cpp: set-up and the RU side (produce); network_input_io.cpp: the I/O thread;
// network_input_check.cpp: the validation of each fragment.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "daqflow/apps/builders/first_failure.hpp"
#include "daqflow/apps/fed/fed_stream.hpp"
#include "daqflow/apps/fed/network_input.hpp"
#include "daqflow/core/buffer_pool.hpp"
#include "daqflow/core/net.hpp"
#include "daqflow/core/rings.hpp"

namespace daqflow::apps::fed {

class NetworkInput final : public FragmentSource {
 public:
  ~NetworkInput() override;
  NetworkInput(const NetworkInput&) = delete;
  NetworkInput& operator=(const NetworkInput&) = delete;

  static Result<std::unique_ptr<NetworkInput>> create(const NetworkInputSettings& settings);

  [[nodiscard]] Produced produce(std::uint64_t event, std::span<std::byte> out) override;
  [[nodiscard]] std::size_t max_super_fragment_size() const override;
  [[nodiscard]] std::size_t fed_count() const override { return feds_.size(); }
  [[nodiscard]] FragmentSourceStats stats() const override;
  [[nodiscard]] std::string failure() const override;
  void stop() override;

 private:
  // A validated fragment in a staging chunk, passed from the I/O thread to produce().
  struct Fragment {
    core::Buffer chunk;
    std::uint32_t offset = 0;
    std::uint32_t size = 0;
    std::uint32_t flags = 0;  // wire::EventFlags
    EventId id;               // numbering cms: the event's id on this FED's stream
  };

  struct Fed {
    // Declared first so that it is destroyed last, after every Buffer taken from it.
    std::unique_ptr<core::BufferPool> pool;
    std::uint32_t index = 0;  // position in feds_ (epoll tags: index << 1, | 1 for the connection)
    std::uint16_t id = 0;
    std::uint16_t port = 0;
    std::unique_ptr<core::SpscRing<Fragment>> ring;
    // I/O thread.
    core::UniqueFd listen_fd;
    core::UniqueFd conn_fd;
    std::string peer;
    core::Buffer chunk;            // being filled
    std::size_t read_pos = 0;      // bytes received into chunk
    std::size_t parse_pos = 0;     // start of the first frame not yet published
    std::uint64_t next_event = 0;  // event of the next fragment on the stream
    // FEROL blocks: the fragment in progress began at parse_pos; its data gathered so far is
    // [parse_pos + header, gather_end); raw_pos is the next block's header (parse_pos between
    // fragments).
    std::size_t raw_pos = 0;
    std::size_t gather_end = 0;
    std::uint32_t next_packet = 0;  // 0: between fragments
    std::uint32_t block_event = 0;  // the event number of the fragment's first block
    CmsEventSequence sequence;      // numbering cms: the L1 ids so far
    bool paused = false;            // pool or ring full: not reading
    bool in_epoll = false;          // conn_fd is in the epoll set
    bool watching = false;          // ... with EPOLLIN
    bool dead = false;              // a stream error: never read again
    // RU thread.
    alignas(core::kCacheLine) Fragment front;  // own cache line: the I/O thread writes above
    bool has_front = false;
  };

  explicit NetworkInput(const NetworkInputSettings& settings);
  Result<void> listen_all();

  // I/O thread.
  void run();
  void accept_on(Fed& fed);
  void service(Fed& fed);
  bool parse(Fed& fed);  // false when the ring is full
  bool parse_frames(Fed& fed);
  bool parse_blocks(Fed& fed);
  void publish(Fed& fed, std::size_t offset, std::size_t size, std::uint32_t flags);
  // The FEDs' fronts disagree on the event (numbering cms): what to report, or "".
  [[nodiscard]] std::string disagreement() const;
  bool next_read_window(Fed& fed, std::size_t& limit);
  // Why a connection that ended within a fragment failed the stream.
  [[nodiscard]] std::string truncation(const Fed& fed, const std::string& how) const;
  void close_connection(Fed& fed);
  void set_watch(Fed& fed, bool on);
  void pause(Fed& fed);
  void on_connection_event(Fed& fed, std::uint32_t events);
  void stop_all_io();
  // Validates one fragment of fed.next_event, with the event number its frame or FEROL blocks
  // carried. Returns the event's flags (0 or kEventCorrupted); sets ok to false when the error
  // fails the input.
  std::uint32_t check(Fed& fed, std::uint64_t frame_event, std::uint16_t frame_fed,
                      std::span<const std::byte> fragment, bool& ok);
  // numbering cms: takes the fragment's L1 id into the FED's sequence; "" or what is wrong.
  std::string take_event_number(Fed& fed, std::span<const std::byte> fragment);
  // The id of the event that a fragment with this L1 id (none: not known yet) on fed's stream
  // belongs to: how reports name it.
  [[nodiscard]] EventId event_of(const Fed& fed, std::optional<std::uint32_t> l1_id) const;
  void report(const Fed& fed, EventId event, const std::string& what, bool fatal);
  // Fails the stream in the fragment in progress (its L1 id, where a block header gave it).
  void fail_stream(Fed& fed, const std::string& what,
                   std::optional<std::uint32_t> l1_id = std::nullopt);
  // Any thread; the first reason wins.
  void set_failure(std::string reason);

  NetworkInputSettings settings_;
  std::size_t chunk_size_ = 0;
  std::size_t max_frame_ = 0;
  std::vector<std::unique_ptr<Fed>> feds_;
  core::UniqueFd epoll_fd_;
  core::UniqueFd wake_fd_;  // eventfd: stop() wakes the I/O thread
  std::thread thread_;
  std::atomic<bool> stopping_{false};

  std::uint64_t next_event_ = 0;  // RU thread: the event produce() expects

  std::atomic<std::uint64_t> events_{0};
  std::atomic<std::uint64_t> fragments_{0};
  std::atomic<std::uint64_t> bytes_{0};
  std::atomic<std::uint64_t> errors_{0};
  std::atomic<std::uint64_t> crc_checked_{0};
  FirstFailure failure_;  // set by the I/O thread or produce()
};

}  // namespace daqflow::apps::fed
