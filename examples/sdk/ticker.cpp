// An application type in a library of its own (daqflow/runtime/app_library.hpp): `ticker` counts
// ticks at a configured rate, publishes them as a metric and fails, if asked, after a number of
// them. It is what every type is: a settings struct with its spec (errors name file, line and
// key), an application on the kit (ApplicationWith: configure, data-path timers, results,
// fail()), and its registry entry.
//
//   libraries: [libdaqflow_ticker.so]
//   ...
//       - {type: ticker, id: tick1, rate_hz: 100, fail_after: 0}

#include <chrono>
#include <cstdint>
#include <daqflow/runtime/app_library.hpp>
#include <daqflow/runtime/settings.hpp>
#include <string>

namespace {

using daqflow::Result;
using daqflow::runtime::ParamSpec;

struct TickerSettings {
  double rate_hz = 0;
  std::uint64_t fail_after = 0;

  static const daqflow::runtime::SettingsSpec<TickerSettings>& spec() {
    static const auto s =
        daqflow::runtime::SettingsSpec<TickerSettings>()
            .bind(ParamSpec::number("rate_hz", "ticks per second").range(0.1, 100000),
                  &TickerSettings::rate_hz)
            .bind(ParamSpec::integer("fail_after", "ticks, then the ticker fails (0: never)")
                      .default_value(0)
                      .at_least(0),
                  &TickerSettings::fail_after);
    return s;
  }
};

class Ticker final : public daqflow::runtime::ApplicationWith<Ticker, TickerSettings> {
 public:
  Result<void> setup(daqflow::runtime::AppContext& ctx, const TickerSettings& s) override {
    fail_after_ = s.fail_after;
    ticks_ = &ctx.metrics().counter("ticks", "ticks counted while enabled");
    count_ = 0;
    const auto period = std::chrono::nanoseconds(static_cast<std::int64_t>(1e9 / s.rate_hz));
    data_path().every(period, [this](std::int64_t) { tick(); });
    return daqflow::ok();
  }

  [[nodiscard]] nlohmann::json results() const override {
    return {{"ticks", count_.load(std::memory_order_relaxed)}};
  }

 private:
  void tick() {
    if (!producing()) return;
    const std::uint64_t n = count_.load(std::memory_order_relaxed) + 1;
    count_.store(n, std::memory_order_relaxed);
    ticks_->add_single_writer();
    if (fail_after_ != 0 && n == fail_after_) {
      fail("failed after " + std::to_string(n) + " ticks, as configured (fail_after)");
    }
  }

  std::uint64_t fail_after_ = 0;
  daqflow::core::Counter* ticks_ = nullptr;
  std::atomic<std::uint64_t> count_{0};
};

void register_ticker(daqflow::runtime::AppRegistry& registry) {
  registry.add(daqflow::runtime::app_type<Ticker>(
      "ticker", "Counts ticks at rate_hz while enabled (an application type from a library)"));
}

}  // namespace

DAQFLOW_APP_LIBRARY(register_ticker)
