#include "daqflow/runtime/app_library.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <mutex>

#include "daqflow/core/shared_library.hpp"

namespace daqflow::runtime {

namespace {

using EntryFn = const AppLibraryEntry* (*)();

// Libraries loaded in this process, by canonical path: never unloaded, since the types they
// registered (their factories, their hooks) live in them.
struct Loaded {
  std::string path;
  core::SharedLibrary library;
  const AppLibraryEntry* entry = nullptr;
};

std::mutex& loaded_mutex() {
  static std::mutex m;
  return m;
}

std::vector<Loaded>& loaded() {
  // Never destroyed: registries may outlive static destruction's order (a program's own static
  // registry holds the types), and their code must stay mapped until the process is gone.
  static auto* all = new std::vector<Loaded>;
  return *all;
}

Result<const AppLibraryEntry*> entry_of(const std::string& canonical, const std::string& path) {
  std::lock_guard lock(loaded_mutex());
  for (const Loaded& l : loaded()) {
    if (l.path == canonical) return l.entry;
  }
  auto library = core::SharedLibrary::open(canonical);
  if (!library) return Error(library.error().code(), library.error().message());
  const auto entry_fn = library->function<EntryFn>("daqflow_app_library");
  if (entry_fn == nullptr) {
    return Error(ErrorCode::invalid_argument,
                 fmt::format("'{}' exports no daqflow_app_library (a library of application "
                             "types ends with DAQFLOW_APP_LIBRARY(...), "
                             "daqflow/runtime/app_library.hpp)",
                             path));
  }
  const AppLibraryEntry* entry = entry_fn();
  if (entry == nullptr || entry->build_id == nullptr || entry->register_types == nullptr) {
    return Error(ErrorCode::invalid_argument,
                 fmt::format("'{}': daqflow_app_library gives no entry", path));
  }
  if (std::string_view(entry->build_id) != build_id()) {
    return Error(ErrorCode::invalid_argument,
                 fmt::format("'{}' was built against {}; this is {}: rebuild the library "
                             "against this daqflow's installation",
                             path, entry->build_id, build_id()));
  }
  loaded().push_back({canonical, std::move(*library), entry});
  return entry;
}

}  // namespace

const char* build_id() {
  return DAQFLOW_BUILD_ID;
}

Result<std::vector<std::string>> load_app_library(const std::string& path, AppRegistry& registry) {
  std::error_code ec;
  const std::filesystem::path canonical = std::filesystem::canonical(path, ec);
  if (ec) return Error(ErrorCode::not_found, fmt::format("'{}': {}", path, ec.message()));
  auto entry = entry_of(canonical.string(), path);
  if (!entry) return entry.error();

  AppRegistry own;
  try {
    (*entry)->register_types(own);
  } catch (const std::exception& e) {
    return Error(ErrorCode::invalid_argument,
                 fmt::format("'{}': registering its types failed: {}", path, e.what()));
  }
  std::vector<std::string> names = own.names();
  if (names.empty()) {
    return Error(ErrorCode::invalid_argument,
                 fmt::format("'{}' registers no application type", path));
  }
  for (const std::string& name : names) {
    const AppType* there = registry.find(name);
    if (there == nullptr) continue;
    // The library listed twice, or read by a second configuration: nothing to add.
    if (there->library == canonical.string()) return names;
    return Error(
        ErrorCode::invalid_argument,
        fmt::format("'{}' registers the application type '{}', which {} registers "
                    "already",
                    path, name, there->library.empty() ? "daqflow" : "'" + there->library + "'"));
  }
  for (const std::string& name : names) {
    AppType type = *own.find(name);
    type.library = canonical.string();
    registry.add(std::move(type));
  }
  return names;
}

}  // namespace daqflow::runtime
