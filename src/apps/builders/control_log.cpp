#include "daqflow/apps/builders/control_log.hpp"

#include <algorithm>
#include <cstring>

namespace daqflow::apps {

ControlLog::~ControlLog() {
  clear();
  core::retire_pool(pool_, core::BusyPool::leak, "control log");
}

Result<void> ControlLog::configure(const std::string& name, std::vector<transport::AppIndex> peers,
                                   std::size_t capacity, std::size_t gather) {
  clear();
  if (gather < 1 || gather > transport::kMaxSegments) {
    return Error(name + ": gather " + std::to_string(gather) + " is not within 1.." +
                 std::to_string(transport::kMaxSegments));
  }
  gather_ = gather;
  core::retire_pool(pool_, core::BusyPool::leak, "control log");
  // Beyond the log's own messages, the transports hold buffers until the peers have taken them.
  const std::size_t slack = 16 * peers.size() + 16;
  auto pool = core::BufferPool::create(name + ".control", kControlPayloadMax, capacity + slack);
  if (!pool) return pool.error();
  pool_ = std::move(*pool);
  spare_ = pool_->acquire();
  records_ = std::vector<Record>(capacity);
  peers_.clear();
  for (const auto p : peers) peers_.push_back(Peer{p, 0, true});
  head_ = tail_ = 0;
  return ok();
}

bool ControlLog::push(wire::MessageType type, std::uint64_t tag, std::span<const std::byte> payload,
                      int only) {
  if (!spare_ && pool_) spare_ = pool_->acquire();
  if (!has_room() || payload.size() > kControlPayloadMax) return false;
  core::Buffer b = std::move(spare_);
  spare_ = pool_->acquire();  // empty while the transports hold every other buffer
  std::memcpy(b.data(), payload.data(), payload.size());
  Record& r = records_[tail_ % records_.size()];
  r.type = type;
  r.tag = tag;
  r.payload = std::move(b);
  r.size = static_cast<std::uint32_t>(payload.size());
  r.only = only;
  ++tail_;
  return true;
}

int ControlLog::post(transport::Endpoint& endpoint, std::vector<transport::AppIndex>& gone) {
  int posted = 0;
  for (std::size_t p = 0; p < peers_.size(); ++p) {
    Peer& peer = peers_[p];
    if (!peer.live) {
      peer.cursor = tail_;
      continue;
    }
    while (peer.cursor < tail_) {
      const Record& r = records_[peer.cursor % records_.size()];
      if (r.only >= 0 && static_cast<std::size_t>(r.only) != p) {
        ++peer.cursor;
        continue;
      }
      message_.clear();
      message_.type = r.type;
      message_.tag = r.tag;
      message_.add(r.payload.share(), 0, r.size);
      // The records after it for this peer, of its type, as far as gather_ goes.
      std::uint64_t next = peer.cursor + 1;
      while (message_.segment_count < gather_ && next < tail_) {
        const Record& more = records_[next % records_.size()];
        if (more.only >= 0 && static_cast<std::size_t>(more.only) != p) {
          ++next;
          continue;
        }
        if (more.type != r.type) break;
        message_.add(more.payload.share(), 0, more.size);
        message_.tag = more.tag;
        ++next;
      }
      const transport::SendStatus s = endpoint.post_send(peer.index, message_);
      if (s == transport::SendStatus::ok) {
        peer.cursor = next;
        ++posted;
        continue;
      }
      message_.clear();
      if (s == transport::SendStatus::back_pressure || s == transport::SendStatus::not_connected)
        break;
      peer.live = false;
      peer.cursor = tail_;
      gone.push_back(peer.index);
      break;
    }
  }
  reclaim();
  if (!spare_ && pool_) spare_ = pool_->acquire();
  return posted;
}

void ControlLog::reclaim() {
  std::uint64_t low = tail_;
  for (const Peer& p : peers_) {
    if (p.live) low = std::min(low, p.cursor);
  }
  while (head_ < low) {
    records_[head_ % records_.size()].payload.reset();
    ++head_;
  }
}

void ControlLog::drop(transport::AppIndex peer) {
  for (Peer& p : peers_) {
    if (p.index == peer) {
      p.live = false;
      p.cursor = tail_;
    }
  }
  reclaim();
}

void ControlLog::revive(transport::AppIndex peer) {
  for (Peer& p : peers_) {
    if (p.index == peer && !p.live) {
      p.live = true;
      p.cursor = tail_;
    }
  }
}

bool ControlLog::idle() const {
  return std::all_of(peers_.begin(), peers_.end(),
                     [this](const Peer& p) { return !p.live || p.cursor >= tail_; });
}

void ControlLog::clear() {
  message_.clear();
  spare_.reset();
  for (Record& r : records_) r.payload.reset();
  for (Peer& p : peers_) p.cursor = tail_;
  head_ = tail_;
}

}  // namespace daqflow::apps
