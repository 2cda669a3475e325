#pragma once
// The consumers an assigner gives work to, and how it loses and fences them: the part of the
// failure model the EVM (its BUs), the SFC (its workers) and a time-slice manager (its builders)
// share; each adds only its own work table and messages.
//
// A consumer is alive from the start. It is lost when its connection fails (lose()) or when it is
// silent for longer than the timeout while the watch runs (check()). Losing it raises its epoch:
// from then on nothing it sends under an older epoch is accepted (accepts()), so work it held and
// that was given to another consumer cannot be completed twice. The assigner tells it the new
// epoch (a fence message); it drops what it holds and rejoins under that epoch (rejoin()), after
// which it is served again.
//
// Pure state: the application feeds it what it hears and a clock reading, so it runs in tests
// without sockets. Threading: one thread (the assigner's agent).

#include <cstddef>
#include <cstdint>
#include <vector>

#include "daqflow/transport/address.hpp"

namespace daqflow::apps {

class ConsumerSet {
 public:
  ConsumerSet() = default;
  // Consumers by application index, each listed once (checked by the caller's configuration).
  ConsumerSet(const std::vector<transport::AppIndex>& consumers, std::int64_t timeout_ns);

  [[nodiscard]] std::size_t size() const { return consumers_.size(); }
  [[nodiscard]] transport::AppIndex index(std::size_t position) const {
    return consumers_[position].index;
  }
  // Position of a consumer in the list, -1 when the index is none of them.
  [[nodiscard]] int position_of(transport::AppIndex index) const {
    return index < position_.size() ? position_[index] : -1;
  }

  // Starts the silence watch: every live consumer counts as heard from now.
  void start_watch(std::int64_t now_ns);
  void heard_from(std::size_t position, std::int64_t now_ns) {
    consumers_[position].last_heard_ns = now_ns;
  }
  // Told each time the assigner runs. A gap of over a quarter of the timeout since the last time
  // (the assigner itself frozen or descheduled) counts against no consumer: what they sent
  // meanwhile is still unread, so their silence is measured without it.
  void ran(std::int64_t now_ns);
  // Live consumers silent for longer than the timeout are lost; their positions are appended.
  void check(std::int64_t now_ns, std::vector<std::size_t>& lost_now);
  // Loses a consumer (connection failed, silent): false when it was lost already.
  bool lose(std::size_t position);
  // A lost consumer back under the epoch it was fenced with; false otherwise.
  bool rejoin(std::size_t position, std::uint32_t epoch, std::int64_t now_ns);

  [[nodiscard]] bool alive(std::size_t position) const { return consumers_[position].alive; }
  [[nodiscard]] std::uint32_t epoch(std::size_t position) const {
    return consumers_[position].epoch;
  }
  // Whether what the consumer sends under this epoch counts: it is alive and not fenced since.
  [[nodiscard]] bool accepts(std::size_t position, std::uint32_t epoch) const {
    const Consumer& c = consumers_[position];
    return c.alive && c.epoch == epoch;
  }
  [[nodiscard]] std::size_t alive_count() const { return alive_; }
  // Application indexes, in the order they were lost / rejoined (a consumer may be in both).
  [[nodiscard]] const std::vector<transport::AppIndex>& lost() const { return lost_; }
  [[nodiscard]] const std::vector<transport::AppIndex>& rejoined() const { return rejoined_; }

 private:
  struct Consumer {
    transport::AppIndex index = 0;
    std::uint32_t epoch = 0;  // + 1 at each loss
    std::int64_t last_heard_ns = 0;
    bool alive = true;
  };
  std::vector<Consumer> consumers_;
  std::vector<int> position_;  // by AppIndex
  std::int64_t timeout_ns_ = 0;
  std::int64_t ran_ns_ = 0;  // when the assigner last ran (ran())
  std::size_t alive_ = 0;
  bool watching_ = false;
  std::vector<transport::AppIndex> lost_;
  std::vector<transport::AppIndex> rejoined_;
};

}  // namespace daqflow::apps
