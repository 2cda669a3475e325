#include "daqflow/bench/result_set.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "daqflow/bench/host.hpp"
#include "daqflow/control/summary.hpp"

namespace daqflow::bench {

namespace {

std::string csv_cell(const nlohmann::json& v) {
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
    std::string quoted = "\"";
    for (char c : s) {
      if (c == '"') quoted += '"';
      quoted += c;
    }
    return quoted + "\"";
  }
  if (v.is_number_integer() || v.is_number_unsigned()) return v.dump();
  if (v.is_number_float()) return fmt::format("{:.6g}", v.get<double>());
  if (v.is_null()) return "";
  return v.dump();
}

Result<void> write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc | std::ios::binary);
  if (!out) return Error("cannot write " + path.string());
  out << text;
  if (!out.flush()) return Error("cannot write " + path.string());
  return {};
}

// The contract's key order, which nlohmann::json (sorted keys) would not keep.
nlohmann::ordered_json document(const ResultSet& result, const nlohmann::json& host) {
  nlohmann::ordered_json j;
  j["bench"] = result.bench;
  j["stem"] = result.stem;
  j["transport"] = result.transport;
  j["date"] = result.date;
  j["host"] = host;
  j["command"] = result.command;
  j["params"] = result.params;
  j["columns"] = result.columns;
  j["rows"] = result.rows;
  j["summary"] = result.summary;
  return j;
}

}  // namespace

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  if (n == 0) return 0;
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

void add_row(ResultSet& result, nlohmann::json row) {
  if (!row.is_array() || row.size() != result.columns.size()) {
    throw std::logic_error(fmt::format("{}: a row of {} values for {} columns", result.stem,
                                       row.size(), result.columns.size()));
  }
  result.rows.push_back(std::move(row));
}

ResultSet cluster_result_set(std::string bench, std::string stem, const ClusterSettings& cluster,
                             std::string command) {
  ResultSet r;
  r.bench = std::move(bench);
  r.stem = std::move(stem);
  r.transport = cluster.transport;
  r.command = std::move(command);
  r.params = {
      {"transport", cluster.transport}, {"idle", cluster.idle}, {"port_base", cluster.port_base}};
  if (!cluster.ucx_tls.empty()) r.params["ucx_tls"] = cluster.ucx_tls;
  if (!cluster.ofi_provider.empty()) r.params["ofi_provider"] = cluster.ofi_provider;
  return r;
}

nlohmann::json to_json(const ResultSet& result, const nlohmann::json& host) {
  return nlohmann::json::parse(document(result, host).dump());
}

std::string to_csv(const ResultSet& result) {
  std::string out;
  for (std::size_t i = 0; i < result.columns.size(); ++i) {
    if (i != 0) out += ',';
    out += csv_cell(result.columns[i]);
  }
  out += '\n';
  for (const auto& row : result.rows) {
    for (std::size_t i = 0; i < row.size(); ++i) {
      if (i != 0) out += ',';
      out += csv_cell(row[i]);
    }
    out += '\n';
  }
  return out;
}

Result<std::vector<std::string>> write_result_files(const std::string& dir, ResultSet& result,
                                                    const Plot& plot) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Error("cannot create " + dir + ": " + ec.message());
  if (result.date.empty()) result.date = control::iso8601_utc(std::chrono::system_clock::now());
  const std::filesystem::path base = std::filesystem::path(dir) / result.stem;

  const auto doc = document(result, to_json(host_info()));
  std::vector<std::string> written;
  const std::pair<std::string, std::string> files[] = {
      {".json", doc.dump(2) + "\n"}, {".csv", to_csv(result)}, {".svg", render_svg(plot)}};
  for (const auto& [ext, text] : files) {
    const auto path = base.string() + ext;
    if (auto ok = write_file(path, text); !ok) return ok.error();
    written.push_back(path);
  }
  return written;
}

}  // namespace daqflow::bench
