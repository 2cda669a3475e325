#pragma once
// The application types that ship with daqflow.

#include "daqflow/runtime/application.hpp"

namespace daqflow::apps {

// Adds every built-in application type (roundtrip, source, sink, ...) to the registry.
void register_builtin_apps(runtime::AppRegistry& registry);

// A registry of the built-in types, made on first use.
[[nodiscard]] const runtime::AppRegistry& builtin_registry();

}  // namespace daqflow::apps
