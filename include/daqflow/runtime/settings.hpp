#pragma once
// Typed settings: an application type's parameters bound, once, to the members of its settings
// struct. The spec is the type's parameter spec (what the loader and the control API validate,
// with file:line:key errors); the binding reads the validated values into a Settings before the
// application's setup(ctx, settings) runs (its configure() with the settings read), so that it
// only sizes and opens.
//
//   struct CounterSettings {
//     static const SettingsSpec<CounterSettings>& spec();
//     std::string peer;
//     std::int64_t count = 0;
//   };
//   const SettingsSpec<CounterSettings>& CounterSettings::spec() {
//     static const auto spec = SettingsSpec<CounterSettings>()
//         .bind(ParamSpec::app_ref("peer", "where to send"), &CounterSettings::peer)
//         .bind(ParamSpec::integer("count", "messages").default_value(100).at_least(1),
//               &CounterSettings::count);
//     return spec;
//   }
//
// The built-in types' specs are written as settings schemas, from which the build makes these
// functions (cmake/settings_spec.py).
//
// A member's type is one ParamReader::get<T>() reads: bool, std::int64_t, std::uint32_t,
// std::uint64_t, double, std::string, std::vector<std::string>, std::vector<std::int64_t>,
// std::optional<std::int64_t> or nlohmann::json (an object parameter kept whole). An object
// parameter whose fields are settings of their own binds to a member struct with its own spec:
//
//   .bind("event_size", "event sizes, bytes", SizeSettings::spec(), &Settings::event_size)
//
// Control thread; a spec is immutable once built and may be shared.

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "daqflow/core/result.hpp"
#include "daqflow/runtime/application.hpp"
#include "daqflow/runtime/params.hpp"

namespace daqflow::runtime {

template <typename Settings>
class SettingsSpec {
 public:
  template <typename T>
  SettingsSpec&& bind(ParamSpec spec, T Settings::*member) && {
    std::string key = spec.name;
    readers_.push_back(
        [key = std::move(key), member](ParamReader& p, Settings& s) { s.*member = p.get<T>(key); });
    specs_.push_back(std::move(spec));
    return std::move(*this);
  }

  // An object parameter read into a member struct by the fields' own spec.
  template <typename Sub>
  SettingsSpec&& bind(std::string name, std::string help, const SettingsSpec<Sub>& fields,
                      Sub Settings::*member) && {
    specs_.push_back(ParamSpec::object(name, std::move(help), fields.params()));
    readers_.push_back(
        [key = std::move(name), readers = fields.readers_, member](ParamReader& p, Settings& s) {
          ParamReader o = p.object(key);
          for (const auto& read_one : readers) read_one(o, s.*member);
        });
    return std::move(*this);
  }

  // The parameter bound last took over older keys and forms (ParamSpec::replacing).
  SettingsSpec&& replacing(std::vector<std::string> old_keys, std::string how) && {
    specs_.back().replaces = std::move(old_keys);
    specs_.back().migration = std::move(how);
    return std::move(*this);
  }

  // Parameters of a part read into a member struct by the part's own spec, at the same level
  // as this spec's own (a readout's FED parameters beside the RU's).
  template <typename Sub>
  SettingsSpec&& include(const SettingsSpec<Sub>& part, Sub Settings::*member) && {
    for (const ParamSpec& spec : part.params()) specs_.push_back(spec);
    readers_.push_back([readers = part.readers_, member](ParamReader& p, Settings& s) {
      for (const auto& read_one : readers) read_one(p, s.*member);
    });
    return std::move(*this);
  }

  // The parameter spec of the application type (AppType::params).
  [[nodiscard]] const std::vector<ParamSpec>& params() const { return specs_; }

  // The settings from validated parameters; an error names the key (a kind the spec let through
  // that the member cannot hold: a bug of the binding).
  [[nodiscard]] Result<Settings> read(const nlohmann::json& params) const {
    Settings s{};
    ParamReader p(params, "");
    for (const auto& read_one : readers_) read_one(p, s);
    if (auto r = p.status(); !r) return r.error();
    return s;
  }

 private:
  template <typename>
  friend class SettingsSpec;

  std::vector<ParamSpec> specs_;
  std::vector<std::function<void(ParamReader&, Settings&)>> readers_;
};

// An error about one parameter found in setup(), for checks across parameters that the spec
// cannot express: "parameter 'KEY': WHAT", invalid_argument as the spec's own errors.
[[nodiscard]] inline Error param_error(std::string_view key, std::string_view what) {
  return Error(ErrorCode::invalid_argument,
               "parameter '" + std::string(key) + "': " + std::string(what));
}

// An application whose parameters arrive as its settings struct, whose static `spec()` returns
// its const SettingsSpec<Settings>&; setup(ctx, settings), the application's configure(), gets
// the values read from its current parameters.
//
//   class Counter final : public ApplicationWith<Counter, CounterSettings> { ... };
template <typename App, typename Settings>
class ApplicationWith : public Application {
 public:
  using SettingsType = Settings;

  Result<void> configure(AppContext& ctx) final {
    auto settings = Settings::spec().read(ctx.params());
    if (!settings) return settings.error();
    return setup(ctx, *settings);
  }
  virtual Result<void> setup(AppContext& ctx, const Settings& settings) = 0;
};

// The registry entry of an application type with typed settings: its name, help and spec, and
// how to make one. Further fields (enable rank, peers, results folding) are set on the result.
template <typename App>
[[nodiscard]] AppType app_type(std::string name, std::string help) {
  AppType t;
  t.name = std::move(name);
  t.help = std::move(help);
  t.params = App::SettingsType::spec().params();
  t.make = [] { return std::make_unique<App>(); };
  return t;
}

}  // namespace daqflow::runtime
