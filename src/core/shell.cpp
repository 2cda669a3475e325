#include "daqflow/core/shell.hpp"

namespace daqflow::core {

std::string shell_quote(std::string_view word) {
  std::string out = "'";
  for (const char c : word) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

}  // namespace daqflow::core
