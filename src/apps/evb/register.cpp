// The event-builder application types: evm, ru, bu (docs/event-builder.md).

#include "daqflow/apps/evb/register.hpp"

#include "bu_app.hpp"
#include "evm_app.hpp"
#include "ru_app.hpp"

namespace daqflow::apps::evb {

void register_evb_apps(runtime::AppRegistry& registry) {
  registry.add(evm_type());
  registry.add(ru_type());
  registry.add(bu_type());
}

}  // namespace daqflow::apps::evb
