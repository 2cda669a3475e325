#pragma once
// The dashboard served at / by every control port (docs/monitoring.md): its page, script, style
// and plotting library (uPlot, from npm), embedded in the binary at build time from web/ by
// cmake/Embed.cmake, so that nothing is installed beside the binary or fetched at run time.

#include <algorithm>
#include <span>
#include <string_view>

namespace daqflow::runtime {

struct EmbeddedAsset {
  std::string_view path;  // "/", "/ui/dashboard.js", ...
  std::string_view content_type;
  std::string_view body;
};

[[nodiscard]] std::span<const EmbeddedAsset> embedded_assets();

[[nodiscard]] inline const EmbeddedAsset* find_asset(std::string_view path) {
  const auto assets = embedded_assets();
  const auto it = std::find_if(assets.begin(), assets.end(),
                               [path](const EmbeddedAsset& a) { return a.path == path; });
  return it == assets.end() ? nullptr : &*it;
}

}  // namespace daqflow::runtime
