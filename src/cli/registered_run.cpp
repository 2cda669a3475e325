// A run's entry in the run registry, as `daqflow run` makes and closes it.
#include "cli/registered_run.hpp"

#include <pwd.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "daqflow/control/launcher.hpp"
#include "daqflow/runtime/app_library.hpp"

namespace daqflow::cli {

namespace {

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "?";
  return name;
}

// The number of the run `daqflow run --attach` takes over.
Result<std::uint32_t> attached_number(control::RunRegistry& registry,
                                      std::optional<std::uint32_t> given, const std::string& path) {
  if (given) return *given;
  auto number = last_run_of(registry, path, "running");
  if (number && !*number) number = last_run_of(registry, path, "controller_died");
  if (!number) return number.error();
  if (!*number) {
    return Error(ErrorCode::not_found, "no run of " + path + " is running in the run registry " +
                                           registry.location() +
                                           ": give the run's number as run.number");
  }
  return **number;
}

}  // namespace

nlohmann::json record_json(const control::RunRecord& r, bool whole) {
  nlohmann::json j = {{"number", r.number},
                      {"state", r.state},
                      {"config_name", r.config_name},
                      {"config_path", r.config_path},
                      {"version", r.version},
                      {"host", r.host},
                      {"user", r.user},
                      {"started_ms", r.started_ms},
                      {"stopped_ms", r.stopped_ms ? nlohmann::json(*r.stopped_ms) : nullptr}};
  if (!whole) return j;
  j["config_text"] = r.config_text;
  j["summary"] = r.summary;
  j["transitions"] = r.transitions;
  j["files"] = nlohmann::json::array();
  for (const auto& f : r.files) {
    j["files"].push_back({{"path", f.path},
                          {"bytes", f.bytes},
                          {"events", f.events},
                          {"checksum", f.checksum},
                          {"application", f.application},
                          {"host", f.host}});
  }
  j["comments"] = nlohmann::json::array();
  for (const auto& c : r.comments) {
    j["comments"].push_back({{"at_ms", c.at_ms}, {"user", c.user}, {"text", c.text}});
  }
  return j;
}

Result<nlohmann::json> runs_view(const runtime::ClusterConfig& config, std::string_view rest,
                                 const std::map<std::string, std::string>& query) {
  auto registry = open_run_registry(config);
  if (!registry) return registry.error();
  if (auto marked = mark_dead_controllers(**registry); !marked) return marked.error();
  if (!rest.empty()) {
    std::uint32_t number = 0;
    const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), number);
    if (ec != std::errc() || end != rest.data() + rest.size()) {
      return Error(ErrorCode::invalid_argument, "not a run number: " + std::string(rest));
    }
    auto run = (*registry)->show(number);
    if (!run) return run.error();
    return record_json(*run, true);
  }
  control::RunFilter filter;
  if (const auto it = query.find("state"); it != query.end()) filter.state = it->second;
  if (const auto it = query.find("config"); it != query.end()) filter.config_name = it->second;
  if (const auto it = query.find("limit"); it != query.end()) {
    std::size_t limit = 0;
    const auto [end, ec] =
        std::from_chars(it->second.data(), it->second.data() + it->second.size(), limit);
    if (ec != std::errc() || limit == 0) {
      return Error(ErrorCode::invalid_argument, "limit: not a positive number: " + it->second);
    }
    filter.limit = limit;
  }
  auto runs = (*registry)->list(filter);
  if (!runs) return runs.error();
  nlohmann::json out = {{"registry", (*registry)->location()}, {"runs", nlohmann::json::array()}};
  for (const auto& r : *runs) out["runs"].push_back(record_json(r, false));
  return out;
}

Result<void> mark_dead_controllers(control::RunRegistry& registry) {
  control::RunFilter running;
  running.state = "running";
  running.limit = 1000;
  auto runs = registry.list(running);
  if (!runs) return runs.error();
  const std::string here = host_name();
  for (const auto& r : *runs) {
    if (r.host != here || r.controller_pid <= 0) continue;
    if (::kill(static_cast<pid_t>(r.controller_pid), 0) == 0 || errno != ESRCH) continue;
    if (auto set = registry.set_state(r.number, "controller_died"); !set) return set;
    if (auto noted = registry.comment(
            r.number, {unix_now_ms(), user_name(),
                       "its controller (process " + std::to_string(r.controller_pid) + " on " +
                           here + ") is gone; daqflow run --attach takes the run over"});
        !noted) {
      return noted;
    }
  }
  return ok();
}

Result<std::optional<std::uint32_t>> last_run_of(control::RunRegistry& registry,
                                                 const std::string& config_path,
                                                 const std::string& state) {
  const std::string path = std::filesystem::absolute(config_path).lexically_normal().string();
  control::RunFilter filter;
  filter.state = state;
  filter.limit = 1000;
  auto runs = registry.list(filter);
  if (!runs) return runs.error();
  const auto it = std::find_if(runs->begin(), runs->end(),
                               [&](const control::RunRecord& r) { return r.config_path == path; });
  if (it == runs->end()) return std::optional<std::uint32_t>{};
  return std::optional<std::uint32_t>{it->number};
}

std::int64_t unix_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string user_name() {
  if (const char* user = std::getenv("USER"); user != nullptr && *user != '\0') return user;
  if (const passwd* pw = ::getpwuid(::getuid()); pw != nullptr) return pw->pw_name;
  return std::to_string(::getuid());
}

Result<std::unique_ptr<control::RunRegistry>> open_run_registry(
    const runtime::ClusterConfig& config) {
  const std::string location =
      config.run.registry.empty() ? control::default_registry_location() : config.run.registry;
  auto registry = control::RunRegistry::open(location);
  if (!registry) return registry.error().context("run registry");
  return registry;
}

Result<RegisteredRun> register_run(runtime::ClusterConfig& config, const std::string& config_path,
                                   bool attach, bool reuse) {
  auto registry = open_run_registry(config);
  if (!registry) return registry.error();
  RegisteredRun run{std::move(*registry), 0};
  if (auto marked = mark_dead_controllers(*run.registry); !marked) return marked.error();
  const std::string path = std::filesystem::absolute(config_path).lexically_normal().string();
  auto text = control::read_text_file(config_path);
  if (!text) return text.error();
  const auto start_of = [&](std::optional<std::uint32_t> number) {
    control::RunStart start;
    start.number = number;
    start.reuse = reuse;
    start.config_name = std::filesystem::path(config_path).stem().string();
    start.config_path = path;
    start.config_text = *text;
    start.version = runtime::build_id();
    start.host = host_name();
    start.user = user_name();
    start.started_ms = unix_now_ms();
    start.controller_pid = ::getpid();
    return start;
  };
  const std::optional<std::uint32_t> given =
      config.run.number_given ? std::optional<std::uint32_t>(config.run.number) : std::nullopt;
  if (attach) {
    // The run taken over: the configuration's number, else this configuration's last run that
    // the registry has as running (or whose controller died).
    if (auto number = attached_number(*run.registry, given, path); number) {
      run.number = *number;
    } else {
      return number.error();
    }
    if (auto known = run.registry->show(run.number); !known) {
      // Started by hand, not by a daqflow run: recorded now.
      auto start = start_of(run.number);
      start.reuse = true;
      if (auto r = run.registry->begin_run(start); !r) return r.error();
    } else if (auto r = run.registry->set_state(run.number, "running"); !r) {
      return r.error();
    }
    if (auto r = run.registry->comment(
            run.number,
            {unix_now_ms(), user_name(), "taken over by a controller on " + host_name()});
        !r) {
      return r.error();
    }
  } else {
    auto number = run.registry->begin_run(start_of(given));
    if (!number) return number.error();
    run.number = *number;
  }
  config.run.number = run.number;
  config.run.number_given = true;
  return run;
}

std::vector<control::RunFile> files_of(const runtime::ClusterConfig& config,
                                       const control::RunSummary& summary) {
  std::vector<control::RunFile> out;
  for (const auto& app : summary.applications) {
    const auto files = app.results.find("files");
    if (files == app.results.end() || !files->is_array()) continue;
    const auto context =
        std::find_if(config.contexts.begin(), config.contexts.end(),
                     [&](const runtime::ContextConfig& c) { return c.name == app.context; });
    for (const auto& f : *files) {
      control::RunFile file;
      file.path = f.value("path", "");
      file.bytes = f.value("bytes", std::uint64_t{0});
      file.events = f.value("events", std::uint64_t{0});
      file.checksum = f.value("checksum", "");
      file.application = app.id;
      file.host = context != config.contexts.end() ? context->host : "";
      out.push_back(std::move(file));
    }
  }
  return out;
}

void close_registered_run(RegisteredRun& run, const runtime::ClusterConfig& config,
                          const control::RunSummary& summary) {
  auto recorded = run.registry->add_transitions(run.number, summary.transitions);
  if (recorded) recorded = run.registry->add_files(run.number, files_of(config, summary));
  if (recorded) {
    recorded = run.registry->end_run(run.number, summary.ok() ? "ended" : "failed", unix_now_ms(),
                                     summary.to_json());
  }
  if (!recorded) {
    std::fprintf(stderr, "daqflow run: recording the end of run %u: %s\n", run.number,
                 recorded.error().message().c_str());
  }
}

}  // namespace daqflow::cli
