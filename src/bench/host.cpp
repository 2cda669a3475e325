#include "daqflow/bench/host.hpp"

#include <sched.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace daqflow::bench {

namespace {

std::string trim(std::string s) {
  const auto first = s.find_first_not_of(" \t");
  const auto last = s.find_last_not_of(" \t\r\n");
  return first == std::string::npos ? std::string() : s.substr(first, last - first + 1);
}

// The value of the first "key : value" line of a /proc file whose key is `key`.
std::string proc_field(const char* path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    if (trim(line.substr(0, colon)) == key) return trim(line.substr(colon + 1));
  }
  return {};
}

}  // namespace

std::vector<int> usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

HostInfo host_info() {
  HostInfo h;
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) == 0) h.hostname = name;
  const long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
  h.cores = cores > 0 ? static_cast<int>(cores) : 0;
  h.cpu_model = proc_field("/proc/cpuinfo", "model name");
  if (h.cpu_model.empty()) h.cpu_model = "unknown";
  struct utsname u {};
  if (::uname(&u) == 0) h.kernel = u.release;
  // "MemTotal:       24558776 kB"
  const std::string mem = proc_field("/proc/meminfo", "MemTotal");
  if (!mem.empty()) {
    const double kib = std::strtod(mem.c_str(), nullptr);
    h.memory_gib = std::round(kib / (1024.0 * 1024.0) * 10.0) / 10.0;
  }
  return h;
}

nlohmann::json to_json(const HostInfo& host) {
  return {{"hostname", host.hostname},
          {"cores", host.cores},
          {"cpu_model", host.cpu_model},
          {"kernel", host.kernel},
          {"memory_gib", host.memory_gib}};
}

}  // namespace daqflow::bench
