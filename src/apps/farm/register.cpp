// The filter-farm application types: sfc, worker (docs/farm.md).

#include "daqflow/apps/farm/register.hpp"

#include "sfc_app.hpp"
#include "worker_app.hpp"

namespace daqflow::apps::farm {

void register_farm_apps(runtime::AppRegistry& registry) {
  registry.add(sfc_type());
  registry.add(worker_type());
}

}  // namespace daqflow::apps::farm
