#include "ofi_fabric.hpp"

#include <rdma/fi_errno.h>

#include <cstring>
#include <mutex>
#include <vector>

#include "daqflow/core/memory.hpp"

namespace daqflow::transport::ofi {
namespace {

constexpr std::size_t kAlign = 64;

std::string describe(int rc) {
  return std::string(fi_strerror(rc < 0 ? -rc : rc));
}

void close_fid(fid_t f) {
  if (f != nullptr) (void)fi_close(f);
}

void close_now(EndpointFids& f) {
  if (f.ep != nullptr) close_fid(&f.ep->fid);
  if (f.cq != nullptr) close_fid(&f.cq->fid);
  if (f.av != nullptr) close_fid(&f.av->fid);
  f = EndpointFids{};
}

// Retired shm endpoints and the count of live ones, process-wide.
struct Graveyard {
  std::mutex mutex;
  std::vector<EndpointFids> resting;
  std::size_t live = 0;
};

Graveyard& graveyard() {
  static Graveyard g;
  return g;
}

}  // namespace

Domain::~Domain() {
  if (domain != nullptr) close_fid(&domain->fid);
  if (fabric != nullptr) close_fid(&fabric->fid);
  if (info != nullptr) fi_freeinfo(info);
}

Result<std::shared_ptr<Domain>> open_domain(const std::string& provider,
                                            const SourceAddress& source) {
  fi_info* hints = fi_allocinfo();
  if (hints == nullptr) return Error(ErrorCode::unavailable, "libfabric: out of memory for hints");
  const bool shm = provider == "shm";
  hints->ep_attr->type = FI_EP_RDM;
  hints->caps = FI_TAGGED | FI_SEND | FI_RECV;
  // Operation contexts start with an fi_context2, for providers that need the room.
  hints->mode = FI_CONTEXT | FI_CONTEXT2;
  hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_ALLOCATED | FI_MR_VIRT_ADDR | FI_MR_PROV_KEY;
  // Buffers are released on any thread, which may close a send pool's registration.
  hints->domain_attr->threading = FI_THREAD_SAFE;
  hints->tx_attr->msg_order = FI_ORDER_SAS;
  hints->rx_attr->msg_order = FI_ORDER_SAS;
  hints->fabric_attr->prov_name = ::strdup(provider.c_str());
  std::uint64_t flags = 0;
  const char* node = nullptr;
  const char* service = nullptr;
  if (shm) {
    // A name without the "fi_shm://" prefix is taken as the region's exact name, so that peers
    // can compute it.
    hints->addr_format = FI_ADDR_STR;
    hints->src_addr = ::strdup(source.node.c_str());
    hints->src_addrlen = source.node.size() + 1;
  } else {
    hints->addr_format = FI_SOCKADDR_IN;
    node = source.node.c_str();
    service = source.service.c_str();
    flags = FI_SOURCE;
  }
  fi_info* found = nullptr;
  const int rc = fi_getinfo(FI_VERSION(1, 17), node, service, flags, hints, &found);
  fi_freeinfo(hints);
  if (rc != 0 || found == nullptr) {
    return Error(ErrorCode::unavailable,
                 "libfabric provider '" + provider + "' offers no reliable-datagram endpoint at " +
                     source.node + (service != nullptr ? ":" + source.service : std::string()) +
                     ": " + describe(rc) + " (see `fi_info -l` for the providers here)");
  }
  auto d = std::make_shared<Domain>();
  d->info = found;
  d->mr_local = (found->domain_attr->mr_mode & FI_MR_LOCAL) != 0;
  d->shared_memory = shm;
  int r = fi_fabric(found->fabric_attr, &d->fabric, nullptr);
  if (r != 0)
    return Error(ErrorCode::unavailable,
                 "libfabric: cannot open the fabric of '" + provider + "': " + describe(r));
  r = fi_domain(d->fabric, found, &d->domain, nullptr);
  if (r != 0)
    return Error(ErrorCode::unavailable,
                 "libfabric: cannot open the domain of '" + provider + "': " + describe(r));
  return d;
}

Result<std::shared_ptr<RegisteredRegion>> RegisteredRegion::create(std::shared_ptr<Domain> domain,
                                                                   std::size_t bytes) {
  std::shared_ptr<RegisteredRegion> region(new RegisteredRegion());
  auto memory = core::map_pool_memory(std::max<std::size_t>(bytes, kAlign), "libfabric pool");
  if (!memory) return memory.error();
  void* base = memory->data();
  region->size_ = memory->size();
  region->base_ = memory->data();
  region->domain_ = std::move(domain);
  const int rc = fi_mr_reg(region->domain_->domain, base, region->size_, FI_SEND | FI_RECV, 0, 0, 0,
                           &region->mr_, nullptr);
  if (rc != 0) {
    region->mr_ = nullptr;
    // Providers without FI_MR_LOCAL work with unregistered memory too.
    if (region->domain_->mr_local) {
      return Error(ErrorCode::unavailable, "libfabric: cannot register " +
                                               std::to_string(region->size_) +
                                               " bytes: " + describe(rc));
    }
  } else {
    region->desc_ = fi_mr_desc(region->mr_);
  }
  return region;
}

RegisteredRegion::~RegisteredRegion() {
  if (mr_ != nullptr) close_fid(&mr_->fid);
  if (base_ != nullptr) core::unmap_pool_memory({base_, size_});
}

Result<std::unique_ptr<core::BufferPool>> make_registered_pool(
    const std::shared_ptr<Domain>& domain, std::string name, std::size_t buffer_size,
    std::size_t count, std::shared_ptr<RegisteredRegion>* region_out) {
  const std::size_t stride = (std::max<std::size_t>(buffer_size, 1) + kAlign - 1) / kAlign * kAlign;
  auto region = RegisteredRegion::create(domain, stride * count);
  if (!region) return region.error().context("pool '" + name + "'");
  std::shared_ptr<RegisteredRegion> owner = *region;
  if (region_out != nullptr) *region_out = owner;
  return core::BufferPool::over(std::move(name), owner->bytes().first(stride * count), buffer_size,
                                count, owner);
}

void enlist(const Domain& domain) {
  if (!domain.shared_memory) return;
  Graveyard& g = graveyard();
  std::lock_guard lock(g.mutex);
  ++g.live;
}

void retire(EndpointFids fids) {
  if (fids.domain == nullptr || !fids.domain->shared_memory) {
    close_now(fids);
    return;
  }
  std::vector<EndpointFids> to_close;
  {
    Graveyard& g = graveyard();
    std::lock_guard lock(g.mutex);
    g.resting.push_back(std::move(fids));
    if (g.live > 0) --g.live;
    if (g.live == 0) to_close.swap(g.resting);
  }
  for (auto& f : to_close) close_now(f);
}

}  // namespace daqflow::transport::ofi
