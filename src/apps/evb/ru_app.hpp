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
  void release() override;

  [[nodiscard]] int do_work() override;

  [[nodiscard]] bool drained() const override;
  [[nodiscard]] nlohmann::json results() const override;

 private:
  void on_completion(transport::Completion& c);

  Topology topology_;
  transport::Endpoint* endpoint_ = nullptr;
  ReadoutRole role_;
  std::array<transport::Completion, detail::kPollBatch> completions_{};

  // Set by the agent: halting and every block acknowledged (or nothing more can be posted).
  std::atomic<bool> idle_{false};
};

[[nodiscard]] runtime::AppType ru_type();

}  // namespace daqflow::apps::evb
