#include "ucx_context.hpp"

#include <algorithm>
#include <cstring>
#include <string_view>

#include "daqflow/core/memory.hpp"
#include "daqflow/core/sanitizers.hpp"

namespace daqflow::transport::ucx {
namespace {

constexpr std::size_t kAlign = 64;  // BufferPool's stride

std::size_t round_up(std::size_t n, std::size_t to) {
  return (n + to - 1) / to * to;
}

// Settings a sanitizer build needs: UCX's memory hooks patch malloc and mmap, which ASan owns.
// Applied through the configuration, never the environment, so that other code in the process
// sees UCX as configured.
void apply_build_settings([[maybe_unused]] ucp_config_t* config) {
#if DAQFLOW_UNDER_ASAN
  (void)ucp_config_modify(config, "MEM_MALLOC_HOOKS", "n");
  (void)ucp_config_modify(config, "MEM_EVENTS", "n");
#endif
}

// Transports of one host only: a UCX_TLS list made of nothing else keeps every peer on this host.
bool host_local(const std::string& name) {
  static constexpr std::string_view kLocal[] = {"self", "sm",  "shm",  "mm",    "posix",
                                                "sysv", "cma", "knem", "xpmem", "scopy"};
  for (const std::string_view local : kLocal) {
    if (name == local ||
        (name.size() > local.size() && name.starts_with(local) && name[local.size()] == ':')) {
      return true;
    }
  }
  return false;
}

// The UCX_TLS list the context is created with, whether it was host-local, and whether it lets
// UCX use shared memory (or cma) between processes.
struct EffectiveTls {
  std::string tls;
  bool host_local = false;
  bool shared_memory = false;
};

// Connections are set up through UCX's socket-address connection manager, which works only over a
// network device of an enabled transport: a list without tcp (e.g. "posix,cma,self") would leave
// no device to connect through. tcp is added for that; UCX still moves the data over the faster
// transports of the list (shared memory between processes of one host).
EffectiveTls effective_tls(const std::string& tls) {
  // UCX's own choice, or everything but some: shared memory stays available.
  if (tls.empty() || tls.front() == '^') return {tls, false, true};
  bool local = true;
  bool shared = false;
  bool has_tcp = false;
  std::size_t start = 0;
  while (start <= tls.size()) {
    const std::size_t end = std::min(tls.find(',', start), tls.size());
    const std::string name = tls.substr(start, end - start);
    if (name == "all") return {tls, false, true};
    if (name == "tcp" || name.starts_with("tcp:")) {
      has_tcp = true;
      local = false;
    } else {
      local = local && host_local(name);
      shared = shared || (host_local(name) && name != "self");
    }
    start = end + 1;
  }
  return {has_tcp ? tls : tls + ",tcp", local, shared};
}

}  // namespace

Result<std::shared_ptr<Context>> Context::create(const UcxOptions& options,
                                                 std::size_t expected_endpoints) {
  ucp_config_t* ucp_config = nullptr;
  ucs_status_t status = ucp_config_read(nullptr, nullptr, &ucp_config);
  if (status != UCS_OK) {
    return Error(ErrorCode::internal,
                 std::string("ucx: cannot read UCX's configuration: ") + ucs_status_string(status));
  }
  apply_build_settings(ucp_config);
  // A listener must be able to take its port back while connections of an earlier endpoint on it
  // linger in TIME_WAIT (as the tcp transport's SO_REUSEADDR does); two listeners still collide.
  status = ucp_config_modify(ucp_config, "CM_REUSEADDR", "y");
  if (status != UCS_OK) {
    ucp_config_release(ucp_config);
    return Error(ErrorCode::internal,
                 std::string("ucx: cannot set CM_REUSEADDR: ") + ucs_status_string(status));
  }
  const auto [tls, host_local, shared_memory] = effective_tls(options.tls);
  if (!tls.empty()) {
    status = ucp_config_modify(ucp_config, "TLS", tls.c_str());
    if (status != UCS_OK) {
      ucp_config_release(ucp_config);
      return Error("ucx: transports.ucx_tls '" + options.tls +
                   "' is not a valid UCX_TLS value: " + ucs_status_string(status));
    }
  }
  // Over tcp UCX spreads each rendezvous over every device that reaches the peer (for a peer on
  // this host: loopback and the host's other interfaces, two connections through one kernel
  // path). Its choice stands: two connections moved 1 MiB messages 5-9 % faster than one here
  // (docs/transports.md); UCX_MAX_RNDV_RAILS sets it otherwise.
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED |
                      UCP_PARAM_FIELD_ESTIMATED_NUM_EPS | UCP_PARAM_FIELD_NAME |
                      UCP_PARAM_FIELD_REQUEST_SIZE;
  params.features = UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
  // Every endpoint has its own worker on its own thread, but memory registrations are shared.
  params.mt_workers_shared = 1;
  params.estimated_num_eps = expected_endpoints == 0 ? 1 : expected_endpoints;
  params.name = "daqflow";
  // Room in every request for what it belongs to (see kRequestData).
  params.request_size = kRequestData;
  ucp_context_h context = nullptr;
  status = ucp_init(&params, ucp_config, &context);
  ucp_config_release(ucp_config);
  if (status != UCS_OK) {
    return Error(ErrorCode::unavailable,
                 std::string("ucx: cannot initialise UCP") +
                     (options.tls.empty() ? "" : " with UCX_TLS '" + options.tls + "'") + ": " +
                     ucs_status_string(status));
  }
  return std::shared_ptr<Context>(new Context(context, tls, host_local, shared_memory));
}

ucp_err_handling_mode_t Context::err_mode(bool peer_on_this_host) const {
  // Error mode PEER would take shared memory and cma off the endpoint (UCX 1.13 offers them only
  // without it), leaving the data to the tcp lanes of the connection manager: 2.6 GB/s instead
  // of 18 GB/s for 1 MiB here. A peer that UCX can reach through shared memory therefore gets
  // mode NONE; the connection manager's socket still reports one that dies
  // (tests/integration/test_ucx.py kills either side).
  return host_local_tls_ || (peer_on_this_host && shared_memory_) ? UCP_ERR_HANDLING_MODE_NONE
                                                                  : UCP_ERR_HANDLING_MODE_PEER;
}

Context::~Context() {
  ucp_cleanup(context_);
}

Result<std::shared_ptr<MappedRegion>> MappedRegion::create(std::shared_ptr<Context> context,
                                                           std::size_t bytes) {
  auto memory = core::map_pool_memory(bytes, "UCX pool");
  if (!memory) return memory.error();
  void* base = memory->data();
  const std::size_t size = memory->size();
  ucp_mem_map_params_t params{};
  params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
  params.address = base;
  params.length = size;
  ucp_mem_h memh = nullptr;
  const ucs_status_t status = ucp_mem_map(context->get(), &params, &memh);
  if (status != UCS_OK) {
    core::unmap_pool_memory(*memory);
    return Error(ErrorCode::unavailable, "cannot register " + std::to_string(size) +
                                             " bytes with UCX: " + ucs_status_string(status));
  }
  return std::shared_ptr<MappedRegion>(
      new MappedRegion(std::move(context), static_cast<std::byte*>(base), size, memh));
}

MappedRegion::~MappedRegion() {
  ucp_mem_unmap(context_->get(), memh_);
  core::unmap_pool_memory({base_, size_});
}

Result<std::unique_ptr<core::BufferPool>> make_mapped_pool(const std::shared_ptr<Context>& context,
                                                           std::string name,
                                                           std::size_t buffer_size,
                                                           std::size_t count,
                                                           std::shared_ptr<MappedRegion>& region) {
  if (count == 0) return Error("buffer pool '" + name + "': count must be at least 1");
  const std::size_t stride = round_up(buffer_size == 0 ? 1 : buffer_size, kAlign);
  auto mapped = MappedRegion::create(context, stride * count);
  if (!mapped) return mapped.error().context("buffer pool '" + name + "'");
  region = *mapped;
  return core::BufferPool::over(std::move(name), region->bytes(), buffer_size, count, region);
}

}  // namespace daqflow::transport::ucx
