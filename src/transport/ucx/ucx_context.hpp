#pragma once
// The UCP context of one ucx transport (one per process and transport), and buffer pools in
// memory mapped with it once (ucp_mem_map), so that rendezvous transfers go straight from and to
// pool buffers without registering memory on the data path.
//
// Thread safety: the context is created with shared-worker locking (every endpoint has its own
// worker, used by its own thread, while registrations are shared); make_pool may be called from
// any thread. Pools and endpoints hold the context, so it lives until the last of them is gone.

#include <ucp/api/ucp.h>

#include <memory>
#include <span>
#include <string>

#include "daqflow/core/buffer_pool.hpp"
#include "daqflow/core/result.hpp"
#include "daqflow/transport/transport.hpp"

namespace daqflow::transport::ucx {

// Bytes reserved for the application in every UCP request: a request handle points at them.
inline constexpr std::size_t kRequestData = 16;

class Context {
 public:
  // Reads UCX's configuration (UCX_* variables) and applies options.tls as TLS on top.
  static Result<std::shared_ptr<Context>> create(const UcxOptions& options,
                                                 std::size_t expected_endpoints);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  [[nodiscard]] ucp_context_h get() const { return context_; }
  [[nodiscard]] const std::string& tls() const { return tls_; }
  // The error-handling mode of a UCP endpoint: NONE where UCX may move its data through shared
  // memory, which UCX 1.13 serves only in mode NONE (a host-local UCX_TLS list such as
  // posix,cma,self; or a peer on this host with a list that allows shared memory, UCX's own
  // choice included); PEER otherwise, so that UCX itself reports a lost peer.
  [[nodiscard]] ucp_err_handling_mode_t err_mode(bool peer_on_this_host) const;

 private:
  Context(ucp_context_h context, std::string tls, bool host_local_tls, bool shared_memory)
      : context_(context),
        tls_(std::move(tls)),
        host_local_tls_(host_local_tls),
        shared_memory_(shared_memory) {}
  ucp_context_h context_;
  std::string tls_;
  bool host_local_tls_;  // every transport of the list is of this host
  bool shared_memory_;   // the list lets UCX use shared memory or cma
};

// An anonymous mapping registered with the context; unregistered and unmapped when the last
// pool over it is gone.
class MappedRegion {
 public:
  static Result<std::shared_ptr<MappedRegion>> create(std::shared_ptr<Context> context,
                                                      std::size_t bytes);
  ~MappedRegion();
  MappedRegion(const MappedRegion&) = delete;
  MappedRegion& operator=(const MappedRegion&) = delete;

  [[nodiscard]] std::span<std::byte> bytes() const { return {base_, size_}; }
  [[nodiscard]] ucp_mem_h memh() const { return memh_; }

 private:
  MappedRegion(std::shared_ptr<Context> context, std::byte* base, std::size_t size, ucp_mem_h memh)
      : context_(std::move(context)), base_(base), size_(size), memh_(memh) {}
  std::shared_ptr<Context> context_;
  std::byte* base_;
  std::size_t size_;
  ucp_mem_h memh_;
};

// A pool over a new mapped region; region receives the region (for its memory handle).
Result<std::unique_ptr<core::BufferPool>> make_mapped_pool(const std::shared_ptr<Context>& context,
                                                           std::string name,
                                                           std::size_t buffer_size,
                                                           std::size_t count,
                                                           std::shared_ptr<MappedRegion>& region);

}  // namespace daqflow::transport::ucx
