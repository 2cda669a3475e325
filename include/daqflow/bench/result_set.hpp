#pragma once
// One figure set of `daqflow bench`: the rows measured, the settings, the headline summary, and
// the machine. Written as DIR/<stem>.json, DIR/<stem>.csv and (with its plot) DIR/<stem>.svg in
// the format of docs/benchmarks.md, which the report generator (scripts/bench-report) reads.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "daqflow/bench/configs.hpp"
#include "daqflow/bench/plot.hpp"
#include "daqflow/core/result.hpp"

namespace daqflow::bench {

struct ResultSet {
  std::string bench;      // roundtrip | stream | evb | farm | compare | memcpy
  std::string stem;       // file name without extension: "stream-1to1-tcp-size"
  std::string transport;  // "" for benches without one (memcpy)
  std::string date;       // ISO 8601 UTC; filled by write_result_files when empty
  std::string command;    // the command line that reproduces it, every setting spelled out
  nlohmann::json params = nlohmann::json::object();
  std::vector<std::string> columns;
  nlohmann::json rows = nlohmann::json::array();  // arrays of numbers or strings, one per row
  nlohmann::json summary = nlohmann::json::object();
};

// A result set of a bench on a generated cluster, before its rows: its names and command, and in
// params the settings every such bench records (transport, idle strategy, port base; UCX_TLS and
// the libfabric provider where set). The bench adds its own params, columns and rows.
[[nodiscard]] ResultSet cluster_result_set(std::string bench, std::string stem,
                                           const ClusterSettings& cluster, std::string command);

// The JSON document (with the host), in the key order of the contract.
[[nodiscard]] nlohmann::json to_json(const ResultSet& result, const nlohmann::json& host);

// The CSV text: the header line of the columns, then one line per row. Numbers are written with
// up to 6 significant digits after the point, strings quoted when they hold , " or a line break.
[[nodiscard]] std::string to_csv(const ResultSet& result);

// Writes DIR/<stem>.json, .csv and .svg (creating DIR), replacing files of the same stem. The
// date is set to now when empty. Returns the paths written; the error names the file.
[[nodiscard]] Result<std::vector<std::string>> write_result_files(const std::string& dir,
                                                                  ResultSet& result,
                                                                  const Plot& plot);

// The median of the figures of several rounds (0 for none): what the benches compare, since
// single runs on a shared machine wander.
[[nodiscard]] double median(std::vector<double> values);

// Adds a row; checks that it has one value per column.
void add_row(ResultSet& result, nlohmann::json row);

}  // namespace daqflow::bench
