// The time-slice building application types: ts_input, ts_builder (docs/timeslices.md).

#include "daqflow/apps/timeslice/register.hpp"

#include "ts_builder_app.hpp"
#include "ts_input_app.hpp"
#include "ts_manager_app.hpp"

namespace daqflow::apps::timeslice {

void register_timeslice_apps(runtime::AppRegistry& registry) {
  registry.add(ts_input_type());
  registry.add(ts_builder_type());
  registry.add(ts_manager_type());
}

}  // namespace daqflow::apps::timeslice
