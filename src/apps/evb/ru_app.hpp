#pragma once
// `ru`: a readout unit of the two-stage event builder (docs/event-builder.md). Once enabled it
// writes its FEDs' super-fragments into chunk memory as fast as memory allows (the EVM's trigger
// sets the pace through assigns and acks), sends each block the EVM assigns to the named BU, and
// keeps it until the BU acknowledges.
//
// Failures: the EVM's connection failing (not closing in order) fails the RU, and so does a
// message from the EVM that does not decode; a BU's failing only stops sends to it (the EVM
// re-assigns its blocks, this RU resends); a bad input fails.
// Halt: production stops at the last assigned event; drained once every block for a live BU
// has been posted and completed.
//
// Threading: as every application (runtime/application.hpp).

#include <string>

#include "daqflow/runtime/application.hpp"
#include "evb_config.hpp"
#include "readout_role.hpp"

namespace daqflow::apps::evb {

class ReadoutUnit final : public runtime::ApplicationWith<ReadoutUnit, RuSettings> {
 public:
  Result<void> setup(runtime::AppContext& ctx, const RuSettings& s) override;
  void release() override;

  [[nodiscard]] nlohmann::json results() const override;
  [[nodiscard]] static runtime::HostNeeds host_needs(const runtime::ApplicationConfig& app,
                                                     const runtime::ClusterConfig& cluster) {
    return readout_host_needs(app, cluster);
  }

 private:
  void register_handlers();
  // The data path's work: produce ahead of the assigns, post what is cut.
  int work();

  Topology topology_;
  ReadoutRole role_;
};

[[nodiscard]] runtime::AppType ru_type();

}  // namespace daqflow::apps::evb
