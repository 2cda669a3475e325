// daqflow runs: the run registry read and annotated (list, show, comment).
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <memory>
#include <optional>
#include <string>

#include "cli/commands.hpp"
#include "cli/registered_run.hpp"

namespace daqflow::cli {

namespace {

struct RunsArgs {
  std::string registry;  // empty: the default location
  std::string since;
  std::string until;
  std::string state;
  std::string config;
  std::size_t limit = 50;
  std::uint32_t number = 0;
  bool json = false;
  bool write_config = false;
  std::string text;
};

std::unique_ptr<control::RunRegistry> open_registry(const RunsArgs& args) {
  auto registry = control::RunRegistry::open(
      args.registry.empty() ? control::default_registry_location() : args.registry);
  if (!registry) fail("runs", registry.error().message());
  if (auto marked = mark_dead_controllers(**registry); !marked) {
    fail("runs", marked.error().message());
  }
  return std::move(*registry);
}

// The summary's own UTC format: 2026-11-30T05:50:01Z.
std::string utc(std::int64_t ms) {
  return control::iso8601_utc(std::chrono::system_clock::time_point(std::chrono::milliseconds(ms)));
}

// "2026-11-30" or "2026-11-30T05:50[:01][Z]", UTC, as Unix milliseconds.
std::optional<std::int64_t> parse_time(const std::string& text, const char* option) {
  if (text.empty()) return std::nullopt;
  std::tm tm{};
  const char* end = ::strptime(text.c_str(), "%Y-%m-%d", &tm);
  if (end != nullptr && *end == 'T') {
    const char* rest = ::strptime(end + 1, "%H:%M", &tm);
    if (rest != nullptr && *rest == ':') rest = ::strptime(rest + 1, "%S", &tm);
    end = rest;
    if (end != nullptr && *end == 'Z') ++end;
  }
  if (end == nullptr || *end != '\0') {
    fail("runs",
         fmt::format("{} '{}': give a UTC date, 2026-11-30 or 2026-11-30T05:50:00Z", option, text));
  }
  return static_cast<std::int64_t>(::timegm(&tm)) * 1000;
}

std::string duration_of(const control::RunRecord& r) {
  return r.stopped_ms
             ? fmt::format("{:.1f} s", static_cast<double>(*r.stopped_ms - r.started_ms) / 1000.0)
             : std::string("-");
}

void list_command(const RunsArgs& args) {
  control::RunFilter filter;
  filter.since_ms = parse_time(args.since, "--since");
  filter.until_ms = parse_time(args.until, "--until");
  filter.state = args.state;
  filter.config_name = args.config;
  filter.limit = args.limit;
  auto runs = open_registry(args)->list(filter);
  if (!runs) fail("runs", runs.error().message());
  if (args.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& r : *runs) out.push_back(record_json(r, false));
    std::printf("%s\n", out.dump(2).c_str());
    return;
  }
  std::printf("%8s  %-15s  %-20s  %-20s  %10s  %s\n", "run", "state", "configuration",
              "started (UTC)", "duration", "by");
  for (const auto& r : *runs) {
    std::printf("%8u  %-15s  %-20s  %-20s  %10s  %s@%s\n", r.number, r.state.c_str(),
                r.config_name.c_str(), utc(r.started_ms).c_str(), duration_of(r).c_str(),
                r.user.c_str(), r.host.c_str());
  }
}

// The configuration as the run used it, without its number: `daqflow run` takes the registry's
// next one for it.
std::string config_without_number(const std::string& text) {
  YAML::Node root = YAML::Load(text);
  // A configuration without a number comes back as it was written, comments and all.
  if (!root["run"] || !root["run"].IsMap() || !root["run"]["number"]) return text;
  root["run"].remove("number");
  YAML::Emitter out;
  out << root;
  return std::string(out.c_str()) + "\n";
}

void show_command(const RunsArgs& args) {
  auto r = open_registry(args)->show(args.number);
  if (!r) fail("runs", r.error().message());
  if (args.write_config) {
    try {
      std::fputs(config_without_number(r->config_text).c_str(), stdout);
    } catch (const YAML::Exception& e) {
      fail("runs", fmt::format("run {}'s configuration: {}", r->number, e.what()));
    }
    return;
  }
  if (args.json) {
    std::printf("%s\n", record_json(*r, true).dump(2).c_str());
    return;
  }
  std::printf("run %u: %s\n", r->number, r->state.c_str());
  std::printf("  configuration  %s (%s)\n", r->config_name.c_str(), r->config_path.c_str());
  std::printf("  daqflow        %s\n", r->version.c_str());
  std::printf("  started        %s by %s on %s\n", utc(r->started_ms).c_str(), r->user.c_str(),
              r->host.c_str());
  if (r->stopped_ms) {
    std::printf("  stopped        %s (%s)\n", utc(*r->stopped_ms).c_str(), duration_of(*r).c_str());
  }
  if (r->summary.is_object()) {
    std::printf("  status         %s%s\n", r->summary.value("status", "?").c_str(),
                r->summary.contains("failure") && r->summary["failure"].is_string()
                    ? (": " + r->summary["failure"].get<std::string>()).c_str()
                    : "");
    if (r->summary.contains("results") && r->summary["results"].is_object()) {
      for (const auto& [key, value] : r->summary["results"].items()) {
        if (value.is_number()) std::printf("    %-28s %s\n", key.c_str(), value.dump().c_str());
      }
    }
  }
  for (const auto& t : r->transitions) {
    std::printf("  %s %-10s %-16s %-9s %8.1f ms  %s\n", utc(t.at_ms).c_str(), t.transition.c_str(),
                t.application.c_str(), t.outcome.c_str(), t.duration_ms, t.reason.c_str());
  }
  for (const auto& f : r->files) {
    std::printf("  file %s:%s (%s, %llu events, %llu bytes, %s)\n", f.host.c_str(), f.path.c_str(),
                f.application.c_str(), static_cast<unsigned long long>(f.events),
                static_cast<unsigned long long>(f.bytes), f.checksum.c_str());
  }
  for (const auto& c : r->comments) {
    std::printf("  %s, %s: %s\n", utc(c.at_ms).c_str(), c.user.c_str(), c.text.c_str());
  }
}

void comment_command(const RunsArgs& args) {
  if (auto r = open_registry(args)->comment(args.number, {unix_now_ms(), user_name(), args.text});
      !r) {
    fail("runs", r.error().message());
  }
}

}  // namespace

void add_runs(CLI::App& app) {
  auto args = std::make_shared<RunsArgs>();
  auto* cmd = app.add_subcommand(
      "runs", "The run registry: the runs daqflow run started, what made them and how they went");
  cmd->require_subcommand(1);
  cmd->add_option("--registry", args->registry,
                  "the registry: an SQLite file or a postgresql:// URI (default: "
                  "$DAQFLOW_RUNS_DB, else "
                  "$XDG_STATE_HOME/daqflow/runs.sqlite, else "
                  "~/.local/state/daqflow/runs.sqlite)");

  auto* list = cmd->add_subcommand("list", "The runs, newest first");
  list->add_option("--since", args->since, "started at or after this UTC date or time");
  list->add_option("--until", args->until, "started before this UTC date or time");
  list->add_option("--state", args->state, "only runs in this state")
      ->check(CLI::IsMember({"running", "ended", "failed", "controller_died"}));
  list->add_option("--config", args->config, "only runs of this configuration (its file's stem)");
  list->add_option("--limit", args->limit, "at most this many")->capture_default_str();
  list->add_flag("--json", args->json, "print JSON");
  list->callback([args] { list_command(*args); });

  auto* show = cmd->add_subcommand("show", "Everything the registry has of one run");
  show->add_option("number", args->number, "the run's number")->required();
  show->add_flag("--json", args->json, "print JSON");
  show->add_flag("--config", args->write_config,
                 "print the run's configuration without its number, for daqflow run (relative "
                 "paths in it are relative to the original file's folder)");
  show->callback([args] { show_command(*args); });

  auto* comment = cmd->add_subcommand("comment", "Add a comment to a run");
  comment->add_option("number", args->number, "the run's number")->required();
  comment->add_option("text", args->text, "the comment")->required();
  comment->callback([args] { comment_command(*args); });
}

}  // namespace daqflow::cli
