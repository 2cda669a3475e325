#pragma once
// Application types from shared libraries (docs/extending.md). A configuration names libraries
// (`libraries: [PATH, ...]`) that `daqflow check`, the controller and every executive load before
// they read the applications: a type a library registers is then read, validated, hosted,
// monitored and failed exactly as a built-in one.
//
// A library defines its types with the application kit (runtime::ApplicationWith, a settings
// spec) and exports them with one line:
//
//   void register_my_types(daqflow::runtime::AppRegistry& registry) { registry.add(...); }
//   DAQFLOW_APP_LIBRARY(register_my_types)
//
// It shares daqflow's C++ objects (AppRegistry, nlohmann::json, std::string), so it must be built
// against the very daqflow that loads it: the same version, compiler and standard library. The
// line above records that build (DAQFLOW_BUILD_ID); a library whose record differs is refused
// with both, not loaded to crash later. One copy of daqflow's code is in the process: the
// library links daqflow's shared libraries, as the executable does.

#include <string>
#include <vector>

#include "daqflow/core/result.hpp"
#include "daqflow/runtime/application.hpp"
#include "daqflow/version.hpp"

#define DAQFLOW_BUILD_STRING_(x) #x
#define DAQFLOW_BUILD_STRING(x) DAQFLOW_BUILD_STRING_(x)
#if defined(__clang__)
#define DAQFLOW_BUILD_COMPILER \
  "clang " DAQFLOW_BUILD_STRING(__clang_major__) "." DAQFLOW_BUILD_STRING(__clang_minor__)
#elif defined(__GNUC__)
#define DAQFLOW_BUILD_COMPILER \
  "gcc " DAQFLOW_BUILD_STRING(__GNUC__) "." DAQFLOW_BUILD_STRING(__GNUC_MINOR__)
#else
#define DAQFLOW_BUILD_COMPILER "an unknown compiler"
#endif
#if defined(_LIBCPP_VERSION)
#define DAQFLOW_BUILD_STDLIB "libc++ " DAQFLOW_BUILD_STRING(_LIBCPP_VERSION)
#elif defined(__GLIBCXX__)
#define DAQFLOW_BUILD_STDLIB "libstdc++ " DAQFLOW_BUILD_STRING(__GLIBCXX__)
#else
#define DAQFLOW_BUILD_STDLIB "an unknown standard library"
#endif
// The build a translation unit is compiled as: "daqflow 0.1.0, gcc 12.2, libstdc++ 20220819".
#define DAQFLOW_BUILD_ID \
  "daqflow " DAQFLOW_VERSION ", " DAQFLOW_BUILD_COMPILER ", " DAQFLOW_BUILD_STDLIB

namespace daqflow::runtime {

// What a library of application types exports (by DAQFLOW_APP_LIBRARY).
struct AppLibraryEntry {
  const char* build_id;
  void (*register_types)(AppRegistry& registry);
};

// The build of the daqflow running (its DAQFLOW_BUILD_ID).
[[nodiscard]] const char* build_id();

// Loads the library at path and adds its types to registry; a library loaded already (the same
// file) adds nothing again. The library stays loaded for the life of the process. Errors name
// the path: it cannot be loaded, exports no daqflow_app_library, was built against another
// daqflow build (both named), or registers a type that exists already or none at all.
[[nodiscard]] Result<std::vector<std::string>> load_app_library(const std::string& path,
                                                                AppRegistry& registry);

}  // namespace daqflow::runtime

#define DAQFLOW_APP_LIBRARY(register_function)                                                   \
  extern "C" __attribute__((visibility("default"))) const ::daqflow::runtime::AppLibraryEntry*   \
  daqflow_app_library() {                                                                        \
    static const ::daqflow::runtime::AppLibraryEntry entry{DAQFLOW_BUILD_ID, register_function}; \
    return &entry;                                                                               \
  }
