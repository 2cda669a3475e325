#pragma once
// Registration of the event-builder application types (evm, ru, bu); called by
// apps::register_builtin_apps.

#include "daqflow/runtime/application.hpp"

namespace daqflow::apps::evb {

void register_evb_apps(runtime::AppRegistry& registry);

}  // namespace daqflow::apps::evb
