#include "daqflow/apps/builtin.hpp"

#include "daqflow/apps/evb/register.hpp"
#include "daqflow/apps/farm/register.hpp"
#include "daqflow/apps/timeslice/register.hpp"
#include "roundtrip.hpp"
#include "sink.hpp"
#include "source.hpp"

namespace daqflow::apps {

void register_builtin_apps(runtime::AppRegistry& registry) {
  registry.add(roundtrip_type());
  registry.add(source_type());
  registry.add(sink_type());
  evb::register_evb_apps(registry);
  farm::register_farm_apps(registry);
  timeslice::register_timeslice_apps(registry);
}

const runtime::AppRegistry& builtin_registry() {
  static const runtime::AppRegistry instance = [] {
    runtime::AppRegistry r;
    register_builtin_apps(r);
    return r;
  }();
  return instance;
}

}  // namespace daqflow::apps
