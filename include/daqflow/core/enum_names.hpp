#pragma once
// An enum's values with their names, listed once: the name of a value, the value of a name and
// the names an error lists all read the one table.
//
//   constexpr auto kDistNames = core::enum_names<Dist>(
//       {{Dist::fixed, "fixed"}, {Dist::uniform, "uniform"}, {Dist::lognormal, "lognormal"}});
//   kDistNames.name(Dist::fixed);    // "fixed"
//   kDistNames.parse("uniform");     // Dist::uniform
//   kDistNames.list();               // "fixed, uniform or lognormal"
#include <algorithm>
#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace daqflow::core {

template <typename E, std::size_t N>
class EnumNames {
 public:
  using Entry = std::pair<E, const char*>;

  constexpr explicit EnumNames(const std::array<Entry, N>& entries) : entries_(entries) {}

  // The value's name; `unknown` for a value the table lacks.
  [[nodiscard]] constexpr const char* name(E value, const char* unknown = "?") const {
    for (const auto& [v, n] : entries_) {
      if (v == value) return n;
    }
    return unknown;
  }

  // The value named `name`, compared exactly or, with ignore_case, ignoring ASCII case.
  [[nodiscard]] constexpr std::optional<E> parse(std::string_view name,
                                                 bool ignore_case = false) const {
    for (const auto& [v, n] : entries_) {
      if (ignore_case ? equal_ignoring_case(name, n) : name == n) return v;
    }
    return std::nullopt;
  }

  // Every name in the table's order, the last one after `last`: "spin, yield or block".
  [[nodiscard]] std::string list(std::string_view last = " or ") const {
    std::string out;
    for (std::size_t i = 0; i < N; ++i) {
      if (i > 0) out += i + 1 == N ? last : ", ";
      out += entries_[i].second;
    }
    return out;
  }

  [[nodiscard]] constexpr const std::array<Entry, N>& entries() const { return entries_; }

 private:
  static constexpr char lower(char c) {
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
  }
  static constexpr bool equal_ignoring_case(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(),
                                              [](char x, char y) { return lower(x) == lower(y); });
  }

  std::array<Entry, N> entries_;
};

// The table of E's names, its size taken from the list.
template <typename E, std::size_t N>
constexpr EnumNames<E, N> enum_names(const std::pair<E, const char*> (&entries)[N]) {
  std::array<std::pair<E, const char*>, N> a{};
  std::copy(std::begin(entries), std::end(entries), a.begin());
  return EnumNames<E, N>(a);
}

}  // namespace daqflow::core
