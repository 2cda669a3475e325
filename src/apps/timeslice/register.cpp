// The time-slice building application types (docs/timeslices.md): ts_input, ts_builder,
// ts_manager, the clock synchronisation's clock_master and clock_client, and the multicast
// control traffic's mcast_sender and mcast_receiver.

#include "daqflow/apps/timeslice/register.hpp"

#include "apps/clock/clock_apps.hpp"
#include "apps/mcast/mcast_apps.hpp"
#include "ts_builder_app.hpp"
#include "ts_input_app.hpp"
#include "ts_manager_app.hpp"

namespace daqflow::apps::timeslice {

void register_timeslice_apps(runtime::AppRegistry& registry) {
  registry.add(ts_input_type());
  registry.add(ts_builder_type());
  registry.add(ts_manager_type());
  registry.add(clock::clock_master_type());
  registry.add(clock::clock_client_type());
  registry.add(mcast::mcast_sender_type());
  registry.add(mcast::mcast_receiver_type());
}

}  // namespace daqflow::apps::timeslice
