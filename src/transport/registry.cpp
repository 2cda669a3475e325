// The transports built into this binary, looked up by name.

#include <algorithm>
#include <array>
#include <iterator>
#include <string>

#include "daqflow/transport/fault.hpp"
#include "daqflow/transport/transport.hpp"
#include "factories.hpp"

namespace daqflow::transport {
namespace {

constexpr std::string_view kBuilt[] = {
    "inproc", "tcp", "shm",
#ifdef DAQFLOW_HAVE_UCX
    "ucx",
#endif
#ifdef DAQFLOW_HAVE_OFI
    "ofi",
#endif
#ifdef DAQFLOW_HAVE_MPI
    "mpi",
#endif
#ifdef DAQFLOW_HAVE_SIMGRID
    "sim",
#endif
};
constexpr std::string_view kOptional[] = {"ucx", "ofi", "mpi", "sim"};
constexpr std::size_t kNotBuiltCount =
    std::size(kOptional) - (std::size(kBuilt) - 3);  // the first three are always built

std::array<std::string_view, kNotBuiltCount> not_built() {
  std::array<std::string_view, kNotBuiltCount> out{};
  std::size_t n = 0;
  for (const auto name : kOptional) {
    if (std::find(std::begin(kBuilt), std::end(kBuilt), name) == std::end(kBuilt)) out[n++] = name;
  }
  return out;
}

}  // namespace

std::string_view to_string(SendStatus status) {
  switch (status) {
    case SendStatus::ok:
      return "ok";
    case SendStatus::back_pressure:
      return "back pressure";
    case SendStatus::not_connected:
      return "not connected";
    case SendStatus::closed:
      return "closed";
    case SendStatus::too_large:
      return "message too large";
    case SendStatus::invalid:
      return "invalid";
  }
  return "unknown send status";
}

std::span<const std::string_view> transport_names() {
  return kBuilt;
}

std::span<const std::string_view> transports_not_built() {
  static const auto names = not_built();
  return names;
}

Result<std::unique_ptr<Transport>> make_transport(std::string_view name,
                                                  const AddressTable& addresses,
                                                  const BackendOptions& options) {
  for (std::size_t i = 0; i < addresses.size(); ++i) {
    if (addresses[i].index != i) {
      return Error("transport '" + std::string(name) + "': address table entry " +
                   std::to_string(i) + " ('" + addresses[i].id + "') has index " +
                   std::to_string(addresses[i].index));
    }
  }
  if (name == "inproc") return make_inproc_transport(addresses);
  if (name == "tcp") return make_tcp_transport(addresses);
  if (name == "shm") return make_shm_transport(addresses, options.run_tag);
#ifdef DAQFLOW_HAVE_UCX
  if (name == "ucx") return make_ucx_transport(addresses, options.ucx);
#endif
#ifdef DAQFLOW_HAVE_OFI
  if (name == "ofi") return make_ofi_transport(addresses, options.ofi, options.run_tag);
#endif
#ifdef DAQFLOW_HAVE_MPI
  if (name == "mpi") return make_mpi_transport(addresses, options.mpi);
#endif
#ifdef DAQFLOW_HAVE_SIMGRID
  if (name == "sim") return make_sim_transport(addresses, options.sim, options.run_tag);
#endif
  std::string known;
  for (const auto n : kBuilt) known += (known.empty() ? "" : ", ") + std::string(n);
  for (const auto n : transports_not_built()) {
    if (n == name) {
      return Error(ErrorCode::not_found, "transport '" + std::string(name) +
                                             "' was not built: its library was "
                                             "missing at build time (built in: " +
                                             known + ")");
    }
  }
  return Error("unknown transport '" + std::string(name) + "' (built in: " + known + ")");
}

Result<std::unique_ptr<core::BufferPool>> Endpoint::make_send_pool(std::string name,
                                                                   std::size_t buffer_size,
                                                                   std::size_t count) {
  return core::BufferPool::create(std::move(name), buffer_size, count);
}

FaultInjection* fault_injection(Endpoint& endpoint) {
  return dynamic_cast<FaultInjection*>(&endpoint);
}

}  // namespace daqflow::transport
