// Parsers of the reference tools' output.
#include <fmt/format.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <vector>

#include "daqflow/bench/references.hpp"

namespace daqflow::bench {

namespace {

std::vector<std::string> words(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  std::string w;
  while (in >> w) out.push_back(w);
  return out;
}

bool to_double(const std::string& text, double& value) {
  char* end = nullptr;
  value = std::strtod(text.c_str(), &end);
  return end != text.c_str() && *end == '\0';
}

}  // namespace

Result<double> parse_iperf3_json(const std::string& text) {
  const auto first = text.find('{');
  const auto last = text.rfind('}');
  if (first == std::string::npos || last == std::string::npos || last < first) {
    return Error("no JSON document in the output");
  }
  const auto doc = nlohmann::json::parse(text.substr(first, last - first + 1), nullptr, false);
  if (doc.is_discarded()) return Error("the JSON output does not parse");
  if (doc.contains("error")) return Error(doc["error"].dump());
  const auto* bps = doc.contains("end") && doc["end"].contains("sum_received")
                        ? &doc["end"]["sum_received"]["bits_per_second"]
                        : nullptr;
  if (bps == nullptr || !bps->is_number()) {
    return Error("no end.sum_received.bits_per_second in the JSON output");
  }
  return bps->get<double>() / 8e6;
}

Result<SockperfLatency> parse_sockperf(const std::string& text) {
  // "sockperf: Summary: Latency is 6.854 usec", "---> percentile 50.000 =    3.332",
  // "---> <MIN> observation =    3.235".
  SockperfLatency lat;
  bool min = false;
  bool median = false;
  bool avg = false;
  std::smatch m;
  static const std::regex kMin(R"(<MIN> observation\s*=\s*([0-9.]+))");
  static const std::regex kMedian(R"(percentile 50\.0*\s*=\s*([0-9.]+))");
  static const std::regex kAvg(R"(Summary: Latency is\s*([0-9.]+)\s*usec)");
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, kMin)) {
      lat.min_us = std::stod(m[1]);
      min = true;
    } else if (std::regex_search(line, m, kMedian)) {
      lat.median_us = std::stod(m[1]);
      median = true;
    } else if (std::regex_search(line, m, kAvg)) {
      lat.avg_us = std::stod(m[1]);
      avg = true;
    }
  }
  if (!min || !median || !avg) {
    return Error("no <MIN> observation, 50th percentile or summary latency in the output");
  }
  return lat;
}

Result<UcxPerf> parse_ucx_perftest(const std::string& text) {
  // "Final:  2000  0.215  771.216  509.420  1296.65  1963.02  1297  1963": iterations, overhead
  // 50%ile, average, overall (usec), bandwidth average, overall (MB/s), message rate.
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const auto w = words(line);
    if (w.size() < 9 || w[0] != "Final:") continue;
    UcxPerf p;
    double bw = 0;
    if (!to_double(w[2], p.latency_typical_us) || !to_double(w[3], p.latency_avg_us) ||
        !to_double(w[6], bw)) {
      return Error("cannot read the Final: line '" + line + "'");
    }
    p.bandwidth_mb_s = bw * 1.048576;  // ucx_perftest's MB is 2^20 bytes
    return p;
  }
  return Error("no Final: line in the output");
}

Result<FiPingpong> parse_fi_pingpong(const std::string& text) {
  // bytes   #sent   #ack     total       time     MB/sec    usec/xfer   Mxfers/sec
  // 1m      200     =200     400m        4.24s     98.84   10609.13       0.00
  std::istringstream in(text);
  std::string line;
  bool header = false;
  while (std::getline(in, line)) {
    const auto w = words(line);
    if (!w.empty() && w[0] == "bytes" && line.find("MB/sec") != std::string::npos) {
      header = true;
      continue;
    }
    if (!header || w.size() < 7) continue;
    FiPingpong p;
    if (to_double(w[5], p.mb_s) && to_double(w[6], p.usec_per_xfer)) return p;
  }
  return Error("no result row under a 'bytes ... MB/sec usec/xfer' header in the output");
}

Result<double> parse_json_number(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find('{') == std::string::npos) continue;
    const auto doc = nlohmann::json::parse(line.substr(line.find('{')), nullptr, false);
    if (doc.is_discarded() || !doc.is_object()) continue;
    const auto it = doc.find(key);
    if (it != doc.end() && it->is_number()) return it->get<double>();
  }
  return Error("no JSON line with a number '" + key + "' in the output");
}

Result<double> parse_bandwidth_table(const std::string& text, std::uint64_t size) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    // mpirun --tag-output puts "[job,rank]<stdout>:" before each line.
    if (line.starts_with('[')) {
      if (const auto tag = line.find(">:"); tag != std::string::npos) line.erase(0, tag + 2);
    }
    const auto w = words(line);
    if (w.size() < 2) continue;
    double first = 0;
    double last = 0;
    if (!to_double(w.front(), first) || first != static_cast<double>(size)) continue;
    if (to_double(w.back(), last)) return last;
  }
  return Error(fmt::format("no line for size {} (SIZE ... MB/s) in the output", size));
}

}  // namespace daqflow::bench
