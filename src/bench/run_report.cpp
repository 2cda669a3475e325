#include "daqflow/bench/run_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "daqflow/bench/plot.hpp"

namespace daqflow::bench {

namespace {

using nlohmann::json;

struct Sample {
  double t = 0;  // seconds since the run started
  std::string state;
  std::map<std::string, double> counters;
  std::map<std::string, double> gauges;
};

struct AppTrack {
  std::string context;
  std::string type;
  std::vector<Sample> samples;  // in time order
};

using Tracks = std::map<std::string, AppTrack>;  // by application id

// The plots that come first, in this order; every other metric follows by name.
const std::vector<std::string> kFirstRates = {"events_built", "bytes_built", "bytes_in",
                                              "bytes_out",    "messages_in", "messages_out"};

std::string strip_xml_declaration(std::string svg) {
  if (svg.rfind("<?xml", 0) == 0) svg.erase(0, svg.find('\n') + 1);
  return svg;
}

// The rate of a counter between successive samples (per second; a counter that went back was
// reset by a new Configure: no point there), in MB/s for bytes.
Series rate_series(const std::string& app, const AppTrack& track, const std::string& metric) {
  Series s{app, {}, Series::Style::line};
  const bool bytes = metric.find("bytes") != std::string::npos;
  const Sample* last = nullptr;
  double last_value = 0;
  for (const Sample& x : track.samples) {
    const auto it = x.counters.find(metric);
    if (it == x.counters.end()) continue;
    if (last != nullptr && x.t > last->t && it->second >= last_value) {
      const double r = (it->second - last_value) / (x.t - last->t);
      s.points.emplace_back(x.t, bytes ? r / 1e6 : r);
    }
    last = &x;
    last_value = it->second;
  }
  return s;
}

Series value_series(const std::string& app, const AppTrack& track, const std::string& metric) {
  Series s{app, {}, Series::Style::line};
  for (const Sample& x : track.samples) {
    const auto it = x.gauges.find(metric);
    if (it != x.gauges.end()) s.points.emplace_back(x.t, it->second);
  }
  return s;
}

std::string figure(const std::string& metric, const char* kind, Plot plot) {
  double peak = 0;
  std::size_t points = 0;
  for (const Series& s : plot.series) {
    for (const auto& [x, y] : s.points) peak = std::max(peak, y);
    points += s.points.size();
  }
  if (points == 0) return {};
  return fmt::format("<figure data-metric=\"{}\" data-kind=\"{}\" data-peak=\"{}\">\n{}</figure>\n",
                     xml_escape(metric), kind, peak, strip_xml_declaration(render_svg(plot)));
}

const char* state_color(const std::string& state) {
  static const std::map<std::string, const char*> colors = {
      {"Halted", "#78909c"},    {"Ready", "#1e88e5"},      {"Enabled", "#43a047"},
      {"Suspended", "#fb8c00"}, {"Failed", "#e53935"},     {"Configuring", "#fdd835"},
      {"Enabling", "#fdd835"},  {"Suspending", "#fdd835"}, {"Resuming", "#fdd835"},
      {"Halting", "#fdd835"}};
  const auto it = colors.find(state);
  return it == colors.end() ? "#bdbdbd" : it->second;
}

// One row per application, its states as coloured spans over the run.
std::string state_timeline(const Tracks& tracks, double end) {
  constexpr double kLeft = 110;
  constexpr double kWidth = 900;
  constexpr double kRow = 22;
  const double span = end > 0 ? end : 1;
  const double height = 40 + kRow * static_cast<double>(tracks.size()) + 30;
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n",
      kLeft + kWidth + 20, height);
  double y = 20;
  std::set<std::string> seen;
  for (const auto& [id, track] : tracks) {
    svg += fmt::format("<text x=\"4\" y=\"{:.0f}\">{}</text>\n", y + 15, xml_escape(id));
    for (std::size_t i = 0; i < track.samples.size(); ++i) {
      const Sample& s = track.samples[i];
      const double to = i + 1 < track.samples.size() ? track.samples[i + 1].t : s.t;
      seen.insert(s.state);
      svg += fmt::format(
          "<rect x=\"{:.1f}\" y=\"{:.0f}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\">"
          "<title>{} {}: {:.1f} s</title></rect>\n",
          kLeft + kWidth * s.t / span, y, std::max(1.0, kWidth * (to - s.t) / span), kRow - 4,
          state_color(s.state), xml_escape(id), xml_escape(s.state), s.t);
    }
    y += kRow;
  }
  svg += fmt::format(
      "<text x=\"{}\" y=\"{:.0f}\">0 s</text><text x=\"{}\" y=\"{:.0f}\" "
      "text-anchor=\"end\">{:.0f} s</text>\n",
      kLeft, y + 14, kLeft + kWidth, y + 14, span);
  double lx = kLeft + 80;
  for (const std::string& state : seen) {
    svg += fmt::format(
        "<rect x=\"{:.0f}\" y=\"{:.0f}\" width=\"12\" height=\"12\" fill=\"{}\"/>"
        "<text x=\"{:.0f}\" y=\"{:.0f}\">{}</text>\n",
        lx, y + 4, state_color(state), lx + 16, y + 14, xml_escape(state));
    lx += 110;
  }
  return svg + "</svg>\n";
}

}  // namespace

namespace {

// The samples of every application in the folder's .jsonl files, in time order, as tracks;
// returns the seconds from the first sample (or the run's start) to the last. first_ms: the
// run's start when run.json has it, else the first sample's time.
Result<double> read_tracks(const std::string& dir, RunReport& report, Tracks& tracks,
                           std::int64_t& first_ms) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<std::pair<std::int64_t, json>> lines;
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".jsonl") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  for (const fs::path& file : files) {
    std::ifstream in(file);
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (j.is_discarded() || !j.is_object() || !j.contains("t") || !j["t"].is_number() ||
          !j.contains("apps") || !j["apps"].is_array()) {
        ++report.unreadable;
        continue;
      }
      const auto t = j["t"].get<std::int64_t>();
      if (first_ms == 0 || t < first_ms) first_ms = t;
      lines.emplace_back(t, std::move(j));
    }
  }
  if (lines.empty()) {
    return Error(ErrorCode::not_found,
                 "no samples in " + dir + " (daqflow run --record " + dir + " writes them)");
  }
  std::stable_sort(lines.begin(), lines.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  double end = 0;
  for (const auto& [t, j] : lines) {
    ++report.samples;
    for (const json& a : j["apps"]) {
      if (!a.is_object() || !a.contains("id") || !a["id"].is_string()) continue;
      AppTrack& track = tracks[a["id"].get<std::string>()];
      track.context = j.value("context", "");
      track.type = a.value("type", "");
      Sample s;
      s.t = static_cast<double>(t - first_ms) / 1000.0;
      end = std::max(end, s.t);
      s.state = a.value("state", "");
      for (const char* part : {"counters", "gauges"}) {
        if (!a.contains(part) || !a[part].is_object()) continue;
        auto& out = std::string_view(part) == "counters" ? s.counters : s.gauges;
        for (const auto& [name, value] : a[part].items()) {
          if (value.is_number()) out[name] = value.get<double>();
        }
      }
      track.samples.push_back(std::move(s));
    }
  }
  return end;
}

// The figures of the report: the rate of every counter (the data path's first), the value of
// every gauge, each with a series per application that has it.
std::pair<std::string, std::string> metric_figures(Tracks& tracks) {
  // Every metric name, and which applications have it.
  std::map<std::string, std::vector<std::string>> counters;
  std::map<std::string, std::vector<std::string>> gauges;
  for (const auto& [id, track] : tracks) {
    std::set<std::string> c;
    std::set<std::string> g;
    for (const Sample& s : track.samples) {
      for (const auto& [name, v] : s.counters) c.insert(name);
      for (const auto& [name, v] : s.gauges) g.insert(name);
    }
    for (const auto& name : c) counters[name].push_back(id);
    for (const auto& name : g) gauges[name].push_back(id);
  }

  const auto rate_plot = [&](const std::string& metric) {
    Plot p;
    const bool bytes = metric.find("bytes") != std::string::npos;
    p.title = metric + (bytes ? " (MB/s)" : " per second");
    p.x_label = "seconds since the run started";
    p.y_label = bytes ? "MB/s" : metric + " / s";
    for (const auto& id : counters[metric]) p.series.push_back(rate_series(id, tracks[id], metric));
    return figure(metric, "rate", std::move(p));
  };
  const auto value_plot = [&](const std::string& metric) {
    Plot p;
    p.title = metric;
    p.x_label = "seconds since the run started";
    p.y_label = metric;
    for (const auto& id : gauges[metric]) p.series.push_back(value_series(id, tracks[id], metric));
    return figure(metric, "value", std::move(p));
  };

  std::string rates;
  for (const auto& m : kFirstRates) {
    if (counters.count(m) != 0) rates += rate_plot(m);
  }
  for (const auto& [m, ids] : counters) {
    if (std::find(kFirstRates.begin(), kFirstRates.end(), m) == kFirstRates.end()) {
      rates += rate_plot(m);
    }
  }
  std::string values;
  for (const auto& [m, ids] : gauges) values += value_plot(m);
  return {rates, values};
}

}  // namespace

Result<RunReport> render_run_report(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return Error(ErrorCode::not_found, dir + " is not a folder");

  json run = json::object();
  if (std::ifstream in(fs::path(dir) / "run.json"); in) {
    run = json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (run.is_discarded() || !run.is_object()) run = json::object();
  }

  RunReport report;
  Tracks tracks;
  std::int64_t first_ms = run.value("started_ms", std::int64_t{0});
  auto end = read_tracks(dir, report, tracks, first_ms);
  if (!end) return end.error();
  report.applications = tracks.size();
  const auto [rates, values] = metric_figures(tracks);

  std::string apps_table;
  for (const auto& [id, track] : tracks) {
    apps_table += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                              xml_escape(id), xml_escape(track.type), xml_escape(track.context),
                              track.samples.size(),
                              xml_escape(track.samples.empty() ? "" : track.samples.back().state));
  }
  std::string notes;
  if (run.contains("notes") && run["notes"].is_array()) {
    for (const json& n : run["notes"]) {
      if (!n.is_object()) continue;
      const double t = static_cast<double>(n.value("t", std::int64_t{0}) - first_ms) / 1000.0;
      notes += fmt::format("<tr><td class=\"num\">{:.1f}</td><td>{}</td></tr>\n", t,
                           xml_escape(n.value("text", "")));
    }
  }
  std::string summary;
  if (run.contains("summary")) {
    summary = "<h2>Summary</h2>\n<pre>" +
              xml_escape(run["summary"].dump(2, ' ', false, json::error_handler_t::replace)) +
              "</pre>\n";
  }

  const std::string title = fmt::format(
      "daqflow run {}", run.contains("run_number") ? run["run_number"].dump() : std::string("?"));
  report.html = fmt::format(
      R"(<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{0}</title>
<style>
body {{ font: 14px/1.4 sans-serif; margin: 1em 2em; color: #222; }}
table {{ border-collapse: collapse; margin-bottom: 1em; }}
th, td {{ border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: left; }}
td.num {{ text-align: right; }}
figure {{ display: inline-block; margin: 0.5em; }}
figure svg {{ width: 560px; height: auto; }}
pre {{ background: #f5f5f5; padding: 0.6em; max-height: 30em; overflow: auto; }}
</style></head><body>
<h1>{0}</h1>
<p>{1}: {2} samples of {3} applications over {4:.1f} s{5}.</p>
<h2>Applications</h2>
<table><tr><th>application</th><th>type</th><th>context</th><th>samples</th><th>last state</th></tr>
{6}</table>
<h2>States</h2>
{7}
<h2>Rates</h2>
{8}
<h2>Occupancies and other gauges</h2>
{9}
<h2>What the run did</h2>
<table><tr><th>s</th><th>note</th></tr>
{10}</table>
{11}</body></html>
)",
      xml_escape(title), xml_escape(run.value("config", dir)), report.samples, tracks.size(), *end,
      report.unreadable > 0 ? fmt::format(" ({} unreadable lines left out)", report.unreadable)
                            : std::string(),
      apps_table, state_timeline(tracks, *end), rates, values, notes, summary);
  return report;
}

}  // namespace daqflow::bench
