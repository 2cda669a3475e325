#pragma once
// A word for /bin/sh: single-quoted, its own single quotes written '\''.

#include <string>
#include <string_view>

namespace daqflow::core {

[[nodiscard]] std::string shell_quote(std::string_view word);

}  // namespace daqflow::core
