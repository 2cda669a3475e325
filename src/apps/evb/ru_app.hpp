#pragma once
// `ru`: a readout unit of the two-stage event builder (docs/event-builder.md). Once enabled it
// writes its FEDs' super-fragments into chunk memory as fast as memory allows (the EVM's trigger
// sets the pace through assigns and acks), sends each block the EVM assigns to the named BU, and
// keeps it until the BU acknowledges.
//
// Failures: the EVM's connection failing (not closing in order) fails the RU; a BU's failing
// only stops sends to it (the EVM re-assigns its blocks, this RU resends); a bad input fails.
// Halt: production stops at the last assigned event; drained once every block for a live BU
// has been posted and completed.
//
// Threading: as every application (runtime/application.hpp).

#include <array>
#include <atomic>
#include <string>

#include "apps/app_support.hpp"
#include "daqflow/runtime/application.hpp"
#include "evb_config.hpp"
#include "readout_role.hpp"

namespace daqflow::apps::evb {

class ReadoutUnit final : public runtime::Application {
 public:
  ~ReadoutUnit() override;

  Result<void> configure(runtime::AppContext& ctx) override;
  Result<void> enable() override;
  Result<void> suspend() override;
  Result<void> resume() override;
  void begin_halt() override;
  void release() override;

  [[nodiscard]] int do_work() override;
  void wait_for_work(std::chrono::microseconds timeout) override;

  [[nodiscard]] bool drained() const override;
  [[nodiscard]] nlohmann::json results() const override;

 private:
  void on_completion(transport::Completion& c);
  void fail_once(const std::string& reason);

  std::string id_;
  Topology topology_;
  transport::Endpoint* endpoint_ = nullptr;
  ReadoutRole role_;
  std::array<transport::Completion, detail::kPollBatch> completions_{};

  std::atomic<bool> producing_{false};
  std::atomic<bool> halting_{false};
  std::atomic<bool> failed_{false};
  std::atomic<bool> idle_{true};
  std::atomic<std::uint64_t> events_{0};
  std::atomic<std::uint64_t> bytes_{0};
  std::atomic<std::uint64_t> blocks_{0};
  std::atomic<std::uint64_t> throttled_ns_{0};
};

[[nodiscard]] runtime::AppType ru_type();

}  // namespace daqflow::apps::evb
