#include "daqflow/control/status.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>

namespace daqflow::control {

namespace {

std::uint64_t counter(const nlohmann::json& metrics, const char* name) {
  if (!metrics.is_object()) return 0;
  const auto it = metrics.find(name);
  if (it == metrics.end() || !it->is_number()) return 0;
  if (it->is_number_unsigned()) return it->get<std::uint64_t>();
  const double v = it->get<double>();
  return v > 0 ? static_cast<std::uint64_t>(v) : 0;
}

std::string string_field(const nlohmann::json& obj, const char* name) {
  if (!obj.is_object()) return {};
  const auto it = obj.find(name);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::uint64_t delta(std::uint64_t now, std::uint64_t before) {
  return now >= before ? now - before : now;
}

// "  3.10 k ev/s  built 1234 (bu1 600, bu2 634)  incomplete 0  lost 0"
std::string event_builder_figures(const StatusLine& line) {
  std::string text;
  const double ev = line.rates.events_per_s;
  text += ev < 1e3 ? fmt::format("  {:.0f} ev/s", ev) : fmt::format("  {:.2f} k ev/s", ev / 1e3);
  text += fmt::format("  built {}", line.events_built);
  if (!line.built_per_bu.empty()) {
    text += " (";
    for (std::size_t i = 0; i < line.built_per_bu.size(); ++i) {
      if (i > 0) text += ", ";
      text += fmt::format("{} {}", line.built_per_bu[i].first, line.built_per_bu[i].second);
    }
    text += ")";
  }
  text += fmt::format("  incomplete {}  lost {}", line.events_incomplete, line.events_lost);
  return text;
}

}  // namespace

AppSample sample_from_json(const nlohmann::json& app) {
  AppSample s;
  s.id = string_field(app, "id");
  s.type = string_field(app, "type");
  if (auto state = runtime::parse_state(string_field(app, "state")); state) s.state = *state;
  if (app.is_object()) {
    const auto fin = app.find("finished");
    s.finished = fin != app.end() && fin->is_boolean() && fin->get<bool>();
    const auto metrics = app.find("metrics");
    if (metrics != app.end()) {
      s.bytes_in = counter(*metrics, "bytes_in");
      s.messages_in = counter(*metrics, "messages_in");
      s.events_built = counter(*metrics, "events_built");
      s.events_incomplete = counter(*metrics, "events_incomplete");
      s.events_lost = counter(*metrics, "events_lost");
      s.not_written =
          counter(*metrics, "events_not_written") + counter(*metrics, "timeslices_not_written");
    }
  }
  return s;
}

Rates RateMeter::update(std::int64_t now_ns, const std::vector<AppSample>& samples) {
  std::uint64_t bytes = 0;
  std::uint64_t messages = 0;
  std::uint64_t events = 0;
  for (const auto& s : samples) {
    const Last now{s.bytes_in, s.messages_in, s.events_built};
    auto it = last_.find(s.id);
    if (it != last_.end()) {
      bytes += delta(s.bytes_in, it->second.bytes_in);
      messages += delta(s.messages_in, it->second.messages_in);
      // The EVM counts every built event once; BUs count their share of the same events.
      if (s.type == "evm") events += delta(s.events_built, it->second.events_built);
      it->second = now;
    } else {
      last_.emplace(s.id, now);
    }
  }
  Rates rates;
  if (last_ns_ && now_ns > *last_ns_) {
    const double seconds = static_cast<double>(now_ns - *last_ns_) * 1e-9;
    rates.mb_per_s = static_cast<double>(bytes) / 1e6 / seconds;
    rates.messages_per_s = static_cast<double>(messages) / seconds;
    rates.events_per_s = static_cast<double>(events) / seconds;
  }
  last_ns_ = now_ns;
  return rates;
}

std::string state_name(const std::optional<runtime::State>& state) {
  return state ? runtime::to_string(*state) : "?";
}

StatusLine make_status_line(double elapsed_s, const std::vector<AppSample>& samples, Rates rates) {
  StatusLine line;
  line.elapsed_s = elapsed_s;
  line.total = static_cast<int>(samples.size());
  line.enabled =
      static_cast<int>(std::count_if(samples.begin(), samples.end(), [](const AppSample& s) {
        return s.state == runtime::State::Enabled;
      }));
  line.rates = rates;
  for (const auto& s : samples) {
    line.not_written += s.not_written;
    if (s.type == "evm") {
      line.event_builder = true;
      line.events_built = s.events_built;
      line.events_incomplete = s.events_incomplete;
      line.events_lost = s.events_lost;
    } else if (s.type == "bu") {
      line.built_per_bu.emplace_back(s.id, s.events_built);
    }
  }
  return line;
}

std::string format_message_rate(double per_s) {
  if (per_s < 1e3) return fmt::format("{:.0f} msg/s", per_s);
  if (per_s < 1e6) return fmt::format("{:.2f} k msg/s", per_s / 1e3);
  return fmt::format("{:.2f} M msg/s", per_s / 1e6);
}

std::string format_bytes(double bytes) {
  if (bytes < 1e3) return fmt::format("{:.0f} B", bytes);
  if (bytes < 1e6) return fmt::format("{:.1f} kB", bytes / 1e3);
  if (bytes < 1e9) return fmt::format("{:.1f} MB", bytes / 1e6);
  return fmt::format("{:.2f} GB", bytes / 1e9);
}

std::string format_status_line(const StatusLine& line) {
  std::string text =
      fmt::format("{:7.1f} s  enabled {}/{}  {:.2f} MB/s  {}", line.elapsed_s, line.enabled,
                  line.total, line.rates.mb_per_s, format_message_rate(line.rates.messages_per_s));
  if (line.event_builder) text += event_builder_figures(line);
  if (line.not_written > 0) text += fmt::format("  NOT WRITTEN {}", line.not_written);
  return text;
}

std::string format_context_table(const nlohmann::json& context,
                                 const std::vector<nlohmann::json>& apps) {
  std::string out = fmt::format(
      "context {} at {}:{} (pid {}): {}\n", string_field(context, "name"),
      string_field(context, "host"),
      context.is_object() && context.contains("control_port") ? context["control_port"].dump()
                                                              : "?",
      context.is_object() && context.contains("pid") ? context["pid"].dump() : "?",
      string_field(context, "state"));

  using Row = std::array<std::string, 8>;
  std::vector<Row> rows;
  rows.push_back({"id", "type", "state", "msgs in", "bytes in", "msgs out", "bytes out", "reason"});
  for (const auto& app : apps) {
    const nlohmann::json metrics =
        app.is_object() && app.contains("metrics") ? app["metrics"] : nlohmann::json();
    rows.push_back({string_field(app, "id"), string_field(app, "type"), string_field(app, "state"),
                    std::to_string(counter(metrics, "messages_in")),
                    format_bytes(static_cast<double>(counter(metrics, "bytes_in"))),
                    std::to_string(counter(metrics, "messages_out")),
                    format_bytes(static_cast<double>(counter(metrics, "bytes_out"))),
                    string_field(app, "reason")});
  }
  std::array<std::size_t, 8> width{};
  for (const auto& row : rows) {
    for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      // Numbers align right, text left; the last column is not padded.
      const bool numeric = i >= 3 && i <= 6;
      if (i + 1 == row.size()) {
        line += row[i];
      } else if (numeric) {
        line += fmt::format("{:>{}}  ", row[i], width[i]);
      } else {
        line += fmt::format("{:<{}}  ", row[i], width[i]);
      }
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

}  // namespace daqflow::control
