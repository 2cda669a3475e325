#pragma once
// libfabric resources shared by an ofi endpoint and the memory it registers: the fabric and
// domain (held by every registration, so that a send pool that outlives its endpoint can still
// close its registration first), registered regions, and the process-wide place where shm
// endpoints rest after close (see retire()).

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>

#include <cstddef>
#include <memory>
#include <span>
#include <string>

#include "daqflow/core/buffer_pool.hpp"
#include "daqflow/core/result.hpp"

namespace daqflow::transport::ofi {

// The provider's info, fabric and domain; closed when the last holder lets go.
struct Domain {
  Domain() = default;
  Domain(const Domain&) = delete;
  Domain& operator=(const Domain&) = delete;
  ~Domain();

  fi_info* info = nullptr;
  fid_fabric* fabric = nullptr;
  fid_domain* domain = nullptr;
  // The provider wants every local buffer registered (FI_MR_LOCAL).
  bool mr_local = false;
  // shm: endpoints of one process share mappings of each other's regions (see retire()).
  bool shared_memory = false;
};

// Where an endpoint listens: a socket address (tcp-based providers) or a name (shm).
struct SourceAddress {
  std::string node;     // host, or the shm region name
  std::string service;  // port; empty for shm
};

// Finds the provider (e.g. "tcp;ofi_rxm", "shm") and opens its fabric and domain for an RDM
// endpoint at source.
[[nodiscard]] Result<std::shared_ptr<Domain>> open_domain(const std::string& provider,
                                                          const SourceAddress& source);

// An anonymous mapping registered with the domain for send and receive; unregistered and
// unmapped when dropped (before the domain it holds).
class RegisteredRegion {
 public:
  static Result<std::shared_ptr<RegisteredRegion>> create(std::shared_ptr<Domain> domain,
                                                          std::size_t bytes);
  RegisteredRegion(const RegisteredRegion&) = delete;
  RegisteredRegion& operator=(const RegisteredRegion&) = delete;
  ~RegisteredRegion();

  [[nodiscard]] std::span<std::byte> bytes() const { return {base_, size_}; }
  // The descriptor to pass with buffers in this region (nullptr when not registered).
  [[nodiscard]] void* desc() const { return desc_; }

 private:
  RegisteredRegion() = default;
  std::shared_ptr<Domain> domain_;
  std::byte* base_ = nullptr;
  std::size_t size_ = 0;
  fid_mr* mr_ = nullptr;
  void* desc_ = nullptr;
};

// A buffer pool over a registered region; the pool keeps the region (and the domain) alive.
[[nodiscard]] Result<std::unique_ptr<core::BufferPool>> make_registered_pool(
    const std::shared_ptr<Domain>& domain, std::string name, std::size_t buffer_size,
    std::size_t count, std::shared_ptr<RegisteredRegion>* region_out = nullptr);

// The endpoint objects a closing endpoint hands over.
struct EndpointFids {
  fid_ep* ep = nullptr;
  fid_cq* cq = nullptr;
  fid_av* av = nullptr;
  std::shared_ptr<Domain> domain;
};

// Closes an endpoint's objects. The shm provider lets endpoints of one process map each other's
// regions directly, so closing one would pull memory from under a peer in this process that still
// sends to it: shm endpoints are kept open (and never progressed again, like a dead process's)
// until the last live shm endpoint of the process is retired.
void retire(EndpointFids fids);
// Counts a live endpoint of the domain's kind (paired with retire()).
void enlist(const Domain& domain);

}  // namespace daqflow::transport::ofi
