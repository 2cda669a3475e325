#include "daqflow/runtime/application.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <stdexcept>
#include <thread>

namespace daqflow::runtime {

ParamReader AppContext::param_reader() const {
  // The host adds the application's name to configure()'s errors.
  return ParamReader(params(), "");
}

std::string application_named(std::string_view id) {
  return "application '" + std::string(id) + "'";
}

transport::EndpointOptions AppContext::endpoint_options() const {
  transport::EndpointOptions o = cluster().transports.endpoint;
  o.self = self().index;
  return o;
}

Result<AppIndex> AppContext::index_of(std::string_view id) const {
  if (const ApplicationConfig* app = cluster().find_application(id)) return app->index;
  return Error(ErrorCode::not_found,
               application_named(id) + " is not in the configuration (" + cluster().file + ")");
}

Result<std::vector<AppIndex>> AppContext::indexes_of(std::string_view key,
                                                     const std::vector<std::string>& ids) const {
  std::vector<AppIndex> out;
  out.reserve(ids.size());
  for (const auto& id : ids) {
    auto index = index_of(id);
    if (!index) {
      return index.error().context("parameter '" + std::string(key) + "'");
    }
    out.push_back(*index);
  }
  return out;
}

int Application::do_work() {
  return data_path_.round();
}

void Application::wait_for_work(std::chrono::microseconds timeout) {
  timeout = data_path_.sleep_cap(timeout);
  if (endpoint_ != nullptr) {
    endpoint_->wait(timeout);
  } else {
    std::this_thread::sleep_for(timeout);
  }
}

bool Application::drained() const {
  return failed() || !data_path_.has_drained_predicate() || data_path_.drained();
}

Result<nlohmann::json> Application::action(std::string_view name, const nlohmann::json& /*args*/) {
  return Error(ErrorCode::not_found,
               application_named(id_) + " has no action '" + std::string(name) + "'");
}

void Application::fail(std::string reason) const {
  if (failed_.exchange(true, std::memory_order_acq_rel)) {
    spdlog::debug("{}: already failing; also: {}", id_, reason);
    return;
  }
  if (report_failure_) report_failure_(std::move(reason));
}

// Registration happens once at start-up; a duplicate name is a programming error of the binary.
void AppRegistry::add(AppType type) {
  if (type.name.empty()) throw std::invalid_argument("application type without a name");
  if (find(type.name) != nullptr) {
    throw std::invalid_argument("application type '" + type.name + "' registered twice");
  }
  if (!type.make) {
    throw std::invalid_argument("application type '" + type.name + "' has no factory");
  }
  types_.push_back(std::move(type));
}

const AppType* AppRegistry::find(std::string_view name) const {
  const auto it =
      std::find_if(types_.begin(), types_.end(), [&](const AppType& t) { return t.name == name; });
  return it == types_.end() ? nullptr : &*it;
}

std::vector<std::string> AppRegistry::names() const {
  std::vector<std::string> out;
  out.reserve(types_.size());
  for (const AppType& t : types_) out.push_back(t.name);
  std::sort(out.begin(), out.end());
  return out;
}

bool AppRegistry::survivable(const std::vector<std::string>& types) const {
  bool any = false;
  for (const std::string& name : types) {
    const AppType* type = find(name);
    if (type == nullptr) return false;
    if (type->survivable) {
      any = true;
    } else if (!type->auxiliary) {
      return false;
    }
  }
  return any;
}

}  // namespace daqflow::runtime
