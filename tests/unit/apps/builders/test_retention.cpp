// Retention<T> (apps/builders/retention.hpp): items held by key in a window of places, refused
// when their place is taken, found, released one by one, below a key or by a predicate, visited
// oldest first, set aside out of the window and released from there; checked against a std::map
// over random operations.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <vector>

#include "daqflow/apps/builders/retention.hpp"

namespace daqflow::apps {
namespace {

struct Item {
  std::uint64_t value = 0;
};

std::vector<std::uint64_t> keys_of(Retention<Item>& r) {
  std::vector<std::uint64_t> keys;
  r.each([&](std::uint64_t key, Item& item) {
    EXPECT_EQ(item.value, 10 * key) << "the item of key " << key;
    keys.push_back(key);
  });
  return keys;
}

TEST(Retention, HoldsByKeyAndRefusesATakenPlace) {
  Retention<Item> r(3);
  EXPECT_EQ(r.capacity(), 4U) << "a power of two";
  for (std::uint64_t k = 10; k < 14; ++k) r.hold(k)->value = 10 * k;
  EXPECT_EQ(r.size(), 4U);
  EXPECT_FALSE(r.place_free(14));
  EXPECT_EQ(r.key_at(14), 10U);
  EXPECT_EQ(r.hold(14), nullptr) << "key 10 still takes the place of 14";
  ASSERT_NE(r.find(12), nullptr);
  EXPECT_EQ(r.find(12)->value, 120U);
  EXPECT_EQ(r.find(16), nullptr) << "16's place holds 12";
  EXPECT_TRUE(r.release(10));
  EXPECT_FALSE(r.release(10)) << "released once";
  ASSERT_NE(r.hold(14), nullptr);
  EXPECT_EQ(r.find(14)->value, 0U) << "a new item starts as T{}";
}

TEST(Retention, VisitsOldestFirstAndReleasesBelowAKey) {
  Retention<Item> r(8);
  for (std::uint64_t k = 5; k < 12; ++k) r.hold(k)->value = 10 * k;
  ASSERT_TRUE(r.release(7));  // out of order: an acknowledgement that came early
  EXPECT_EQ(keys_of(r), (std::vector<std::uint64_t>{5, 6, 8, 9, 10, 11}));
  std::vector<std::uint64_t> released;
  EXPECT_EQ(r.release_below(9, [&](Item& i) { released.push_back(i.value); }), 3U);
  EXPECT_EQ(released, (std::vector<std::uint64_t>{50, 60, 80})) << "each released item, seen first";
  EXPECT_EQ(keys_of(r), (std::vector<std::uint64_t>{9, 10, 11}));
  EXPECT_EQ(r.release_if([](std::uint64_t k, const Item&) { return k % 2 == 1; }, [](Item&) {}),
            2U);
  EXPECT_EQ(keys_of(r), (std::vector<std::uint64_t>{10}));
}

TEST(Retention, AnItemSetAsideLeavesItsPlaceAndStaysFound) {
  Retention<Item> r(2);
  r.hold(0)->value = 0;
  r.hold(1)->value = 10;
  ASSERT_TRUE(r.set_aside(0));
  EXPECT_FALSE(r.set_aside(0)) << "not in the window any more";
  EXPECT_EQ(r.aside(), 1U);
  EXPECT_EQ(r.in_window(), 1U);
  ASSERT_NE(r.hold(2), nullptr) << "its place is free";
  r.find(2)->value = 20;
  ASSERT_NE(r.find(0), nullptr);
  EXPECT_EQ(keys_of(r), (std::vector<std::uint64_t>{0, 1, 2})) << "aside first: it is older";
  EXPECT_EQ(r.release_below(5, [](Item&) {}), 2U) << "not those aside";
  EXPECT_FALSE(r.release_aside(1, [](Item&) {}));
  int seen = 0;
  EXPECT_TRUE(r.release_aside(0, [&](Item&) { ++seen; }));
  EXPECT_EQ(seen, 1);
  EXPECT_TRUE(r.empty());
}

TEST(Retention, AgreesWithAMapOverRandomOperations) {
  Retention<Item> r(16);
  std::map<std::uint64_t, bool> model;  // key -> aside
  std::mt19937_64 rng(7);
  std::uint64_t next = 0;
  for (int step = 0; step < 100'000; ++step) {
    const auto op = rng() % 8;
    if (op < 3) {
      const bool free = r.place_free(next);
      Item* item = r.hold(next);
      ASSERT_EQ(item != nullptr, free);
      if (item != nullptr) {
        item->value = 10 * next;
        model[next] = false;
        ++next;
      }
    } else if (op < 5 && !model.empty()) {
      auto it = model.begin();
      std::advance(it, static_cast<long>(rng() % model.size()));
      ASSERT_TRUE(r.release(it->first));
      model.erase(it);
    } else if (op == 5) {
      const std::uint64_t below = next > 8 ? next - rng() % 8 : 0;
      std::size_t expected = 0;
      for (auto it = model.begin(); it != model.end();) {
        if (it->first < below && !it->second) {
          it = model.erase(it);
          ++expected;
        } else {
          ++it;
        }
      }
      ASSERT_EQ(r.release_below(below, [](Item&) {}), expected);
    } else if (op == 6 && !model.empty() && r.aside() < 4) {
      auto it = model.begin();
      std::advance(it, static_cast<long>(rng() % model.size()));
      ASSERT_EQ(r.set_aside(it->first), !it->second);
      it->second = true;
    } else if (op == 7) {
      for (auto it = model.begin(); it != model.end(); ++it) {
        if (!it->second) continue;
        ASSERT_TRUE(r.release_aside(it->first, [](Item&) {}));
        model.erase(it);
        break;
      }
    }
    ASSERT_EQ(r.size(), model.size()) << "step " << step;
    if (step % 97 == 0) {
      // Aside first (in the order set aside), then the window in key order.
      std::vector<std::uint64_t> window;
      std::size_t aside = 0;
      r.each([&](std::uint64_t key, Item& item) {
        ASSERT_EQ(item.value, 10 * key);
        ASSERT_TRUE(model.count(key));
        if (model.at(key)) {
          ASSERT_TRUE(window.empty()) << "aside before the window";
          ++aside;
        } else {
          window.push_back(key);
        }
      });
      ASSERT_TRUE(std::is_sorted(window.begin(), window.end()));
      ASSERT_EQ(aside + window.size(), model.size());
    }
  }
}

}  // namespace
}  // namespace daqflow::apps
