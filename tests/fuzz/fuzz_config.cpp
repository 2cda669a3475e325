// Fuzzes the configuration loader: whatever the text, parse_config() answers a configuration or
// errors that each name the file, a line and a column, never undefined behaviour or a crash.
#include <cstddef>
#include <cstdint>
#include <string>

#include "daqflow/apps/builtin.hpp"
#include "daqflow/runtime/config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const daqflow::runtime::AppRegistry registry = [] {
    daqflow::runtime::AppRegistry r;
    daqflow::apps::register_builtin_apps(r);
    return r;
  }();
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto config = daqflow::runtime::parse_config(text, "fuzz.yaml", registry);
  if (!config && config.error().message().rfind("fuzz.yaml", 0) != 0) __builtin_trap();
  return 0;
}
