#pragma once
// The built-in transports, for the registry.

#include <memory>
#include <string>

#include "daqflow/transport/transport.hpp"

namespace daqflow::transport {

[[nodiscard]] std::unique_ptr<Transport> make_inproc_transport(const AddressTable& addresses);
[[nodiscard]] std::unique_ptr<Transport> make_tcp_transport(const AddressTable& addresses);
// Each in its own folder: src/transport/shm/, ucx/, ofi/, mpi/, sim/, with its own options. A
// factory may fail (a library that cannot start); the error says why.
[[nodiscard]] Result<std::unique_ptr<Transport>> make_shm_transport(const AddressTable& addresses,
                                                                    const std::string& run_tag);
[[nodiscard]] Result<std::unique_ptr<Transport>> make_ucx_transport(const AddressTable& addresses,
                                                                    const UcxOptions& options);
[[nodiscard]] Result<std::unique_ptr<Transport>> make_ofi_transport(const AddressTable& addresses,
                                                                    const OfiOptions& options,
                                                                    const std::string& run_tag);
[[nodiscard]] Result<std::unique_ptr<Transport>> make_mpi_transport(const AddressTable& addresses,
                                                                    const MpiOptions& options);
// Only inside a SimGrid simulation (src/sim/).
[[nodiscard]] Result<std::unique_ptr<Transport>> make_sim_transport(const AddressTable& addresses,
                                                                    const SimOptions& options,
                                                                    const std::string& run_tag);

}  // namespace daqflow::transport
