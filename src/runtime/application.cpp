#include "daqflow/runtime/application.hpp"

#include <algorithm>
#include <stdexcept>
#include <thread>

namespace daqflow::runtime {

Result<AppIndex> AppContext::index_of(std::string_view id) const {
  if (const ApplicationConfig* app = cluster().find_application(id)) return app->index;
  return Error("application '" + std::string(id) + "' is not in the configuration (" +
               cluster().file + ")");
}

void Application::wait_for_work(std::chrono::microseconds timeout) {
  std::this_thread::sleep_for(timeout);
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

}  // namespace daqflow::runtime
