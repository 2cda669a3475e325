#include "daqflow/apps/builders/control_log.hpp"

#include <algorithm>
#include <cstring>

#include "apps/app_support.hpp"

namespace daqflow::apps::evb {

Fanout::~Fanout() {
  clear();
  core::retire_pool(pool_, core::BusyPool::leak, "fanout");
}

Result<void> Fanout::configure(const std::string& name, std::vector<transport::AppIndex> peers,
                               std::size_t capacity) {
  clear();
  core::retire_pool(pool_, core::BusyPool::leak, "fanout");
  auto pool = core::BufferPool::create(name + ".control", kControlPayloadMax, capacity);
  if (!pool) return pool.error();
  pool_ = std::move(*pool);
  records_ = std::vector<Record>(capacity);
  peers_.clear();
  for (const auto p : peers) peers_.push_back(Peer{p, 0, true});
  head_ = tail_ = 0;
  return ok();
}

bool Fanout::push(wire::MessageType type, std::uint64_t tag, std::span<const std::byte> payload,
                  int only) {
  if (!has_room() || payload.size() > kControlPayloadMax) return false;
  core::Buffer b = pool_->acquire();
  if (!b) return false;
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

int Fanout::post(transport::Endpoint& endpoint, std::vector<transport::AppIndex>& gone) {
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
      const transport::SendStatus s = endpoint.post_send(peer.index, message_);
      if (s == transport::SendStatus::ok) {
        ++peer.cursor;
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
  return posted;
}

void Fanout::reclaim() {
  std::uint64_t low = tail_;
  for (const Peer& p : peers_) {
    if (p.live) low = std::min(low, p.cursor);
  }
  while (head_ < low) {
    records_[head_ % records_.size()].payload.reset();
    ++head_;
  }
}

void Fanout::drop(transport::AppIndex peer) {
  for (Peer& p : peers_) {
    if (p.index == peer) {
      p.live = false;
      p.cursor = tail_;
    }
  }
  reclaim();
}

void Fanout::revive(transport::AppIndex peer) {
  for (Peer& p : peers_) {
    if (p.index == peer && !p.live) {
      p.live = true;
      p.cursor = tail_;
    }
  }
}

bool Fanout::idle() const {
  return std::all_of(peers_.begin(), peers_.end(),
                     [this](const Peer& p) { return !p.live || p.cursor >= tail_; });
}

void Fanout::clear() {
  message_.clear();
  for (Record& r : records_) r.payload.reset();
  for (Peer& p : peers_) p.cursor = tail_;
  head_ = tail_;
}

}  // namespace daqflow::apps::evb
