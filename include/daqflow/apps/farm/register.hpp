#pragma once
// Registers the filter-farm application types (sfc, worker).

#include "daqflow/runtime/application.hpp"

namespace daqflow::apps::farm {

void register_farm_apps(runtime::AppRegistry& registry);

}  // namespace daqflow::apps::farm
