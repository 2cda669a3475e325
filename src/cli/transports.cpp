// daqflow transports: the transports this binary was built with, and those it was built without
// (their library was missing at build time), so that a missing one is seen, never assumed.
#include <cstdio>
#include <string>

#include "cli/commands.hpp"
#include "daqflow/transport/transport.hpp"

namespace daqflow::cli {

void add_transports(CLI::App& app) {
  auto* sub = app.add_subcommand("transports", "List the transports built into this binary");
  sub->callback([] {
    std::string built;
    for (const auto name : transport::transport_names()) {
      built += (built.empty() ? "" : " ") + std::string(name);
    }
    std::string missing;
    for (const auto name : transport::transports_not_built()) {
      missing += (missing.empty() ? "" : " ") + std::string(name);
    }
    std::printf("built: %s\n", built.c_str());
    std::printf("not built: %s\n", missing.empty() ? "(none)" : missing.c_str());
  });
}

}  // namespace daqflow::cli
