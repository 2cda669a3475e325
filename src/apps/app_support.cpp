#include "app_support.hpp"

#include "daqflow/core/log.hpp"

namespace daqflow::apps::detail {

Error Params::error(const char* key, const std::string& what) const {
  return Error("application '" + app_ + "': parameter '" + key + "': " + what);
}

Result<std::int64_t> Params::integer(const char* key) const {
  const auto it = params_.find(key);
  if (it == params_.end()) return error(key, "missing");
  if (!it->is_number_integer()) return error(key, "expected an integer, got " + it->dump());
  return it->get<std::int64_t>();
}

Result<std::string> Params::string(const char* key) const {
  const auto it = params_.find(key);
  if (it == params_.end()) return error(key, "missing");
  if (!it->is_string()) return error(key, "expected a string, got " + it->dump());
  return it->get<std::string>();
}

Result<std::vector<std::string>> Params::id_list(const char* key) const {
  const auto it = params_.find(key);
  if (it == params_.end()) return error(key, "missing");
  if (!it->is_array()) return error(key, "expected a list of application ids, got " + it->dump());
  std::vector<std::string> out;
  for (const auto& v : *it) {
    if (!v.is_string()) return error(key, "expected application ids, got " + v.dump());
    out.push_back(v.get<std::string>());
  }
  return out;
}

transport::EndpointOptions endpoint_options(const runtime::AppContext& ctx) {
  const runtime::TransportSettings& t = ctx.cluster().transports;
  transport::EndpointOptions o;
  o.self = ctx.self().index;
  o.max_message_size = t.max_message_size;
  o.pipeline_depth = t.pipeline_depth;
  o.recv_buffers = t.recv_buffers;
  o.socket_buffer_bytes = t.socket_buffer_bytes;
  o.payload_crc = t.payload_crc;
  return o;
}

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

Result<std::vector<transport::AppIndex>> indexes_of(const runtime::AppContext& ctx, const char* key,
                                                    const std::vector<std::string>& ids) {
  std::vector<transport::AppIndex> out;
  out.reserve(ids.size());
  for (const auto& id : ids) {
    auto index = ctx.index_of(id);
    if (!index) {
      return index.error().context("application '" + ctx.self().id + "': parameter '" + key + "'");
    }
    out.push_back(*index);
  }
  return out;
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
