#pragma once
// The time-slice building application types (docs/timeslices.md).

#include "daqflow/runtime/application.hpp"

namespace daqflow::apps::timeslice {

void register_timeslice_apps(runtime::AppRegistry& registry);

}  // namespace daqflow::apps::timeslice
