#include "daqflow/runtime/access.hpp"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "daqflow/runtime/config.hpp"

namespace daqflow::runtime {

namespace {

std::string trimmed(const std::string& s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return {};
  const auto last = s.find_last_not_of(" \t\r\n");
  return s.substr(first, last - first + 1);
}

Result<std::string> read_token_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Error(ErrorCode::not_found, "cannot read the token file " + path);
  std::ostringstream text;
  text << in.rdbuf();
  std::string token = trimmed(text.str());
  if (token.empty()) return Error("the token file " + path + " is empty");
  if (token.find_first_of(" \t\r\n") != std::string::npos) {
    return Error("the token file " + path + " holds more than one word");
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && (st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    spdlog::warn("the token file {} can be read by others than its owner (chmod 600 it)", path);
  }
  return token;
}

}  // namespace

Result<std::string> token_from(const std::string& token_file) {
  if (!token_file.empty()) return read_token_file(token_file);
  if (const char* env = std::getenv("DAQFLOW_TOKEN"); env != nullptr) return trimmed(env);
  return std::string();
}

Result<std::string> access_token(const ClusterConfig& config) {
  auto token = token_from(config.access.token_file);
  if (!token) return token.error().context(config.file + ": access.token_file");
  return token;
}

bool is_loopback(std::string_view address) {
  return address.rfind("127.", 0) == 0 || address == "::1" || address == "localhost";
}

bool bearer_matches(std::string_view authorization, std::string_view token) {
  constexpr std::string_view kScheme = "Bearer ";
  if (token.empty() || authorization.size() != kScheme.size() + token.size() ||
      authorization.substr(0, kScheme.size()) != kScheme) {
    return false;
  }
  unsigned char differ = 0;
  for (std::size_t i = 0; i < token.size(); ++i) {
    differ |= static_cast<unsigned char>(authorization[kScheme.size() + i] ^ token[i]);
  }
  return differ == 0;
}

}  // namespace daqflow::runtime
