#pragma once
// Retention<T>: what a producer keeps until its consumer acknowledges it (a RU's blocks until the
// EVM releases them, an input's timeslices until their builder has written them, an SFC's events
// until a worker has decided on them), each under a key that grows with time: a block id, a
// timeslice index, a dispatcher slot.
//
// Items live in a window of `capacity` places (a power of two), the place of key k being
// k mod capacity: hold() refuses a key whose place an older item still takes (the consumers are
// further behind than the window allows: back-pressure, or a protocol error, for the caller to
// say). An item in doubt (given to a consumer that was lost after it may have written it) can be
// set aside: it leaves the window, so that new keys take its place, and stays until it is
// released from aside. find() and each() see both.
//
// Release runs a callback on the item first (drop its buffers, count it), then resets it to T{}.
//
// Agent thread only; nothing allocates after construction but set_aside() (rare).

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace daqflow::apps {

template <class T>
class Retention {
 public:
  Retention() = default;
  // capacity: places in the window, rounded up to a power of two.
  explicit Retention(std::size_t capacity)
      : places_(std::bit_ceil(std::max<std::size_t>(capacity, 1))), mask_(places_.size() - 1) {}

  // Room for n items aside without allocating.
  void reserve_aside(std::size_t n) { aside_.reserve(n); }

  // A new item under key (a T{}), or nullptr when an item held takes its place.
  [[nodiscard]] T* hold(std::uint64_t key) {
    Place& p = places_[key & mask_];
    if (p.used) return nullptr;
    p.used = true;
    p.key = key;  // p.item is T{}: places start so, and vacate() resets them
    if (in_window_ == 0) {
      low_ = key;
      high_ = key + 1;
    } else {
      low_ = std::min(low_, key);
      high_ = std::max(high_, key + 1);
    }
    ++in_window_;
    return &p.item;
  }

  // The item held under key, in the window or aside; nullptr if none.
  [[nodiscard]] T* find(std::uint64_t key) {
    Place& p = places_[key & mask_];
    if (p.used && p.key == key) return &p.item;
    for (Aside& a : aside_) {
      if (a.key == key) return &a.item;
    }
    return nullptr;
  }
  [[nodiscard]] const T* find(std::uint64_t key) const {
    return const_cast<Retention*>(this)->find(key);
  }
  // Whether key's place in the window is free (hold() would take it).
  [[nodiscard]] bool place_free(std::uint64_t key) const { return !places_[key & mask_].used; }
  // The key of the item whose place key would take (valid when place_free(key) is false).
  [[nodiscard]] std::uint64_t key_at(std::uint64_t key) const { return places_[key & mask_].key; }

  // Releases the item under key (window or aside): on_release(item) first; false if none.
  template <class F>
  bool release(std::uint64_t key, F&& on_release) {
    Place& p = places_[key & mask_];
    if (p.used && p.key == key) {
      on_release(p.item);
      vacate(p);
      return true;
    }
    for (std::size_t i = 0; i < aside_.size(); ++i) {
      if (aside_[i].key != key) continue;
      on_release(aside_[i].item);
      aside_.erase(aside_.begin() + static_cast<std::ptrdiff_t>(i));
      return true;
    }
    return false;
  }
  bool release(std::uint64_t key) {
    return release(key, [](T&) {});
  }

  // Releases every item in the window under a key below `below` (not those aside); returns how
  // many.
  template <class F>
  std::size_t release_below(std::uint64_t below, F&& on_release) {
    if (in_window_ == 0 || below <= low_) return 0;
    if (below - low_ > places_.size()) {
      return release_if([below](std::uint64_t key, const T&) { return key < below; }, on_release);
    }
    std::size_t n = 0;
    for (std::uint64_t k = low_; k < below && in_window_ > 0; ++k) {
      Place& p = places_[k & mask_];
      if (!p.used || p.key != k) continue;
      on_release(p.item);
      vacate(p);
      ++n;
    }
    return n;
  }
  // Releases every item in the window for which pred(key, item) holds; returns how many.
  template <class P, class F>
  std::size_t release_if(P&& pred, F&& on_release) {
    std::size_t n = 0;
    for (Place& p : places_) {
      if (!p.used || !pred(p.key, std::as_const(p.item))) continue;
      on_release(p.item);
      vacate(p);
      ++n;
    }
    return n;
  }

  // Releases the item set aside under key: on_release(item) first; false if none is aside.
  template <class F>
  bool release_aside(std::uint64_t key, F&& on_release) {
    for (std::size_t i = 0; i < aside_.size(); ++i) {
      if (aside_[i].key != key) continue;
      on_release(aside_[i].item);
      aside_.erase(aside_.begin() + static_cast<std::ptrdiff_t>(i));
      return true;
    }
    return false;
  }

  // Moves the item under key out of the window, kept aside; false if the window has none.
  bool set_aside(std::uint64_t key) {
    Place& p = places_[key & mask_];
    if (!p.used || p.key != key) return false;
    aside_.push_back({key, std::move(p.item)});
    vacate(p);
    return true;
  }

  // f(key, item) for every item: those aside first (in the order they were set aside: each older
  // than what took its place), then the window's, oldest key first. f must not hold or release.
  template <class F>
  void each(F&& f) {
    for (Aside& a : aside_) f(a.key, a.item);
    if (in_window_ > 0) {
      if (high_ - low_ <= places_.size()) {
        for (std::uint64_t k = low_; k < high_; ++k) {
          Place& p = places_[k & mask_];
          if (p.used && p.key == k) f(k, p.item);
        }
      } else {
        // Keys further apart than the window (rare): visit them sorted.
        order_.clear();
        for (Place& p : places_) {
          if (p.used) order_.push_back(&p);
        }
        std::sort(order_.begin(), order_.end(),
                  [](const Place* a, const Place* b) { return a->key < b->key; });
        for (Place* p : order_) f(p->key, p->item);
      }
    }
  }
  // each(), until f returns false; returns whether f went through all of them.
  template <class F>
  bool each_until(F&& f) {
    bool all = true;
    each([&](std::uint64_t key, T& item) {
      if (all && !f(key, item)) all = false;
    });
    return all;
  }

  // f(key, item) for the items aside (in the order they were set aside), until f returns false;
  // returns whether f went through all of them.
  template <class F>
  bool each_aside_until(F&& f) {
    for (Aside& a : aside_) {
      if (!f(a.key, a.item)) return false;
    }
    return true;
  }
  // f(key, item) for the window's items under keys from `from` on, oldest first, until f returns
  // false; returns whether f went through all of them. A caller that keeps where it stopped
  // visits each key once, however many are held.
  template <class F>
  bool each_in_window_from(std::uint64_t from, F&& f) {
    if (in_window_ == 0 || from >= high_) return true;
    if (high_ - low_ > places_.size()) {
      // Keys further apart than the window (rare): visit them sorted.
      order_.clear();
      for (Place& p : places_) {
        if (p.used && p.key >= from) order_.push_back(&p);
      }
      std::sort(order_.begin(), order_.end(),
                [](const Place* a, const Place* b) { return a->key < b->key; });
      for (Place* p : order_) {
        if (!f(p->key, p->item)) return false;
      }
      return true;
    }
    for (std::uint64_t k = std::max(from, low_); k < high_; ++k) {
      Place& p = places_[k & mask_];
      if (p.used && p.key == k && !f(k, p.item)) return false;
    }
    return true;
  }
  // No key in the window is at or above this one.
  [[nodiscard]] std::uint64_t window_end() const { return high_; }

  [[nodiscard]] std::size_t size() const { return in_window_ + aside_.size(); }
  [[nodiscard]] bool empty() const { return size() == 0; }
  [[nodiscard]] std::size_t in_window() const { return in_window_; }
  [[nodiscard]] std::size_t aside() const { return aside_.size(); }
  [[nodiscard]] std::size_t capacity() const { return places_.size(); }

  // Releases everything, in the window and aside.
  template <class F>
  void clear(F&& on_release) {
    (void)release_if([](std::uint64_t, const T&) { return true; }, on_release);
    for (Aside& a : aside_) on_release(a.item);
    aside_.clear();
  }
  void clear() {
    clear([](T&) {});
  }

 private:
  struct Place {
    bool used = false;
    std::uint64_t key = 0;
    T item{};
  };
  struct Aside {
    std::uint64_t key = 0;
    T item{};
  };

  void vacate(Place& p) {
    p.used = false;
    p.item = T{};
    if (--in_window_ == 0) {
      low_ = high_ = 0;
    } else if (p.key == low_) {
      // The oldest left: the next one held is the window's start.
      if (high_ - low_ <= places_.size()) {
        while (low_ < high_) {
          const Place& q = places_[low_ & mask_];
          if (q.used && q.key == low_) break;
          ++low_;
        }
      } else {
        low_ = high_;
        for (const Place& q : places_) {
          if (q.used) low_ = std::min(low_, q.key);
        }
      }
    }
  }

  std::vector<Place> places_;
  std::uint64_t mask_ = 0;
  std::size_t in_window_ = 0;
  std::uint64_t low_ = 0;   // no key held below
  std::uint64_t high_ = 0;  // no key held at or above
  std::vector<Aside> aside_;
  std::vector<Place*> order_;
};

}  // namespace daqflow::apps
