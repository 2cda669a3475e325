// Finding the daqflow package's filter host for a Python filter (python_filter.hpp).

#include "python_filter.hpp"

#include <fmt/format.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string_view>

#include "daqflow/core/shell.hpp"

namespace daqflow::apps::farm {

namespace {

// The interpreter prints what the embedded one needs, as JSON on its last line.
constexpr std::string_view kProbe = "import daqflow.filters as f; f._print_host_info()";

std::string last_line(const std::string& text) {
  std::string_view t = text;
  while (!t.empty() && t.back() == '\n') t.remove_suffix(1);
  const std::size_t nl = t.rfind('\n');
  return std::string(nl == std::string_view::npos ? t : t.substr(nl + 1));
}

// Runs `python -c PROBE`, stdout and stderr together; the exit status in status.
std::string probe(const std::string& python, int& status) {
  const std::string command =
      fmt::format("{} -c {} 2>&1 </dev/null", core::shell_quote(python), core::shell_quote(kProbe));
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) {
    status = -1;
    return "cannot start a shell";
  }
  std::array<char, 4096> chunk{};
  while (const std::size_t n = std::fread(chunk.data(), 1, chunk.size(), pipe)) {
    if (out.size() < (std::size_t{1} << 20)) out.append(chunk.data(), n);
  }
  status = ::pclose(pipe);
  return out;
}

}  // namespace

Result<FilterHost> python_filter_host(const PythonFilter& filter) {
  if (filter.module.empty() || filter.function.empty()) {
    return Error("kind python needs 'module' and 'function': the function called per event");
  }
  std::string python = filter.python;
  if (python.empty()) {
    const char* env = std::getenv("DAQFLOW_PYTHON");
    python = env != nullptr && *env != '\0' ? env : "python3";
  }
  int status = 0;
  const std::string out = probe(python, status);
  const std::string info_line = last_line(out);
  const auto info = nlohmann::json::parse(info_line, nullptr, /*allow_exceptions=*/false);
  if (status != 0 || !info.is_object() || !info.contains("library")) {
    return Error(fmt::format(
        "python: '{}' cannot load the daqflow package ({}); install it into that interpreter's "
        "environment (pip install ./python) or name another with processing.python:\n{}",
        python,
        WIFEXITED(status) ? fmt::format("exit code {}", WEXITSTATUS(status)) : "did not exit",
        out.size() > 4000 ? out.substr(out.size() - 4000) : out));
  }
  FilterHost host;
  try {
    host.library = info.at("library").get<std::string>();
    host.config =
        fmt::format("executable={}\nmodule={}\nfunction={}\n",
                    info.at("executable").get<std::string>(), filter.module, filter.function);
    if (!filter.path.empty()) {
      host.config += "path=" + std::filesystem::absolute(filter.path).string() + "\n";
    }
    for (const auto& entry : info.at("path")) {
      if (entry.is_string() && !entry.get<std::string>().empty()) {
        host.config += "path=" + entry.get<std::string>() + "\n";
      }
    }
  } catch (const nlohmann::json::exception& e) {
    return Error(fmt::format("python: '{}' described its daqflow package oddly ({}): {}", python,
                             e.what(), info_line));
  }
  return host;
}

}  // namespace daqflow::apps::farm
