#include "app_support.hpp"

#include "daqflow/core/log.hpp"

namespace daqflow::apps::detail {

std::vector<std::string> application_ids(const runtime::ClusterConfig& cluster) {
  std::vector<std::string> ids;
  ids.reserve(cluster.applications.size());
  for (const auto& app : cluster.applications) ids.push_back(app.id);
  return ids;
}

std::string peer_name(const std::vector<std::string>& ids, transport::AppIndex peer) {
  if (peer < ids.size()) return ids[peer];
  return "application #" + std::to_string(peer);
}

void release_pool_if_idle(std::unique_ptr<core::BufferPool>& pool) {
  if (pool && pool->in_use() == 0) pool.reset();
}

void retire_pool(std::unique_ptr<core::BufferPool>& pool) {
  if (!pool) return;
  if (pool->in_use() == 0) {
    pool.reset();
    return;
  }
  spdlog::error("buffer pool '{}' destroyed with {} buffers still referenced; leaking it",
                pool->name(), pool->in_use());
  (void)pool.release();
}

}  // namespace daqflow::apps::detail
