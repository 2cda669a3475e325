// The document -> the ClusterConfig model, key by key. Each key is checked where it is read, so
// that an error points at the key or value at fault; reading goes on after an error to report
// every fault of the file at once.
#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>

#include <algorithm>
#include <filesystem>

#include "daqflow/runtime/app_library.hpp"
#include "daqflow/transport/transport.hpp"
#include "runtime/config_reader.hpp"

namespace daqflow::runtime::detail {

bool is_ip_address(const std::string& text) {
  in6_addr buf{};
  return ::inet_pton(AF_INET, text.c_str(), &buf) == 1 ||
         ::inet_pton(AF_INET6, text.c_str(), &buf) == 1;
}

const Field* find_field(const std::vector<Field>& fields, std::string_view key) {
  auto it =
      std::find_if(fields.begin(), fields.end(), [&](const Field& f) { return f.key == key; });
  return it == fields.end() ? nullptr : &*it;
}

void Reader::document(const YAML::Node& root) {
  if (!root.IsMap()) {
    d_.error(root.Mark(), fmt::format("the configuration must be a mapping with the keys {}, "
                                      "got {}",
                                      join_names(kTopKeys), describe_node(root)));
    return;
  }
  const auto fields = fields_of(root, "the top level", d_);
  for (const Field& f : fields) {
    if (std::find(kTopKeys.begin(), kTopKeys.end(), f.key) == kTopKeys.end()) {
      unknown_key(f, "the top level", kTopKeys);
    }
  }
  // Libraries first, whatever the order in the file: applications may be of their types.
  if (const Field* f = find_field(fields, "libraries")) libraries(*f);
  // Transports next: applications default to them.
  if (const Field* f = find_field(fields, "run")) run_settings(*f);
  if (const Field* f = find_field(fields, "transports")) transport_settings(*f);
  if (const Field* f = find_field(fields, "monitoring")) monitoring_settings(*f);
  if (const Field* f = find_field(fields, "access")) access_settings(*f);
  if (const Field* f = find_field(fields, "hooks")) hooks_settings(*f);
  if (const Field* f = find_field(fields, "hosts")) list_section(*f, &Reader::host);
  if (const Field* f = find_field(fields, "contexts")) {
    contexts(*f);
  } else {
    d_.error(root.Mark(), "missing required key 'contexts' at the top level");
  }
  if (const Field* f = find_field(fields, "faults")) list_section(*f, &Reader::fault);
}

void Reader::unknown_key(const Field& f, const std::string& where,
                         const std::vector<std::string>& expected) {
  d_.error(f.key_node.Mark(), fmt::format("unknown key '{}' in {} ({})", f.key, where,
                                          expected_keys_hint(f.key, expected)));
}

bool Reader::mapping_or_empty(const Field& f) {
  if (f.value.IsMap() || f.value.IsNull()) return true;
  d_.error(f.value.Mark(),
           fmt::format("'{}' must be a mapping, got {}", f.key, describe_node(f.value)));
  return false;
}

std::optional<long long> Reader::integer(const Field& f, const std::string& where, long long min,
                                         long long max) {
  const auto v = f.value.IsScalar() ? parse_integer(f.value.Scalar()) : std::nullopt;
  if (!v) {
    d_.error(f.value.Mark(), fmt::format("'{}' in {}: expected an integer in {}..{}, got {}", f.key,
                                         where, min, max, describe_node(f.value)));
    return std::nullopt;
  }
  if (*v < min || *v > max) {
    d_.error(f.value.Mark(),
             fmt::format("'{}' in {}: {} is out of range {}..{}", f.key, where, *v, min, max));
    return std::nullopt;
  }
  return v;
}

std::optional<std::string> Reader::text(const Field& f, const std::string& where) {
  if (!f.value.IsScalar() || f.value.Scalar().empty()) {
    d_.error(f.value.Mark(), fmt::format("'{}' in {}: expected a non-empty string, got {}", f.key,
                                         where, describe_node(f.value)));
    return std::nullopt;
  }
  return f.value.Scalar();
}

std::optional<std::string> Reader::name(const Field& f, const std::string& where) {
  auto v = text(f, where);
  if (v && !valid_name(*v)) {
    d_.error(f.value.Mark(), fmt::format("'{}' in {}: '{}' may contain only letters, digits, "
                                         "'_', '.' and '-', and no '..'",
                                         f.key, where, *v));
    return std::nullopt;
  }
  return v;
}

std::optional<std::string> Reader::choice(const Field& f, const std::string& where,
                                          const std::vector<std::string>& choices) {
  auto v = text(f, where);
  if (v && std::find(choices.begin(), choices.end(), *v) == choices.end()) {
    d_.error(f.value.Mark(), fmt::format("'{}' in {}: '{}' is not one of: {}", f.key, where, *v,
                                         join_names(choices)) +
                                 did_you_mean(*v, choices));
    return std::nullopt;
  }
  return v;
}

std::string Reader::did_you_mean(const std::string& v, const std::vector<std::string>& choices) {
  const std::string guess = closest_name(v, choices);
  return guess.empty() ? std::string() : fmt::format(" (did you mean '{}'?)", guess);
}

void Reader::run_settings(const Field& section) {
  if (!mapping_or_empty(section) || section.value.IsNull()) return;
  RunSettings& run = parsed_.config.run;
  for (const Field& f : fields_of(section.value, "run", d_)) {
    if (f.key == "number") {
      if (auto v = integer(f, "run", 0, 0xFFFFFFFFLL)) {
        run.number = static_cast<std::uint32_t>(*v);
        run.number_given = true;
      }
    } else if (f.key == "output") {
      if (auto v = text(f, "run")) run.output = *v;
    } else if (f.key == "registry") {
      // A file beside the configuration, or a server's URI (postgresql://...) as it is.
      if (auto v = text(f, "run")) {
        run.registry = v->find("://") != std::string::npos ? *v : beside_config(*v);
      }
    } else {
      unknown_key(f, "run", kRunKeys);
    }
  }
}

void Reader::monitoring_settings(const Field& section) {
  if (!mapping_or_empty(section) || section.value.IsNull()) return;
  MonitoringSettings& m = parsed_.config.monitoring;
  for (const Field& f : fields_of(section.value, "monitoring", d_)) {
    if (f.key == "interval_ms") {
      if (auto v = integer(f, "monitoring", 10, 3600000))
        m.interval_ms = static_cast<std::uint32_t>(*v);
    } else if (f.key == "history_s") {
      if (auto v = integer(f, "monitoring", 1, 7 * 24 * 3600))
        m.history_s = static_cast<std::uint32_t>(*v);
    } else if (f.key == "max_series") {
      if (auto v = integer(f, "monitoring", 1, 65536))
        m.max_series = static_cast<std::uint32_t>(*v);
    } else {
      unknown_key(f, "monitoring", kMonitoringKeys);
    }
  }
  const std::uint64_t bytes = std::uint64_t{m.history_s} * 1000 / m.interval_ms * m.max_series * 8;
  if (bytes > (std::uint64_t{1} << 30)) {
    d_.error(section.key_node.Mark(),
             fmt::format("'monitoring': a history of {} s every {} ms for {} series takes {} MiB; "
                         "at most 1024",
                         m.history_s, m.interval_ms, m.max_series, bytes >> 20));
  }
}

void Reader::access_settings(const Field& section) {
  if (!mapping_or_empty(section) || section.value.IsNull()) return;
  AccessSettings& a = parsed_.config.access;
  for (const Field& f : fields_of(section.value, "access", d_)) {
    if (f.key == "token_file") {
      if (auto v = text(f, "access")) {
        std::filesystem::path path(*v);
        if (path.is_relative()) {
          path = std::filesystem::path(parsed_.config.file).parent_path() / path;
        }
        a.token_file = path.lexically_normal().string();
      }
    } else if (f.key == "protect_reads") {
      const auto v = f.value.IsScalar() ? parse_boolean(f.value.Scalar()) : std::nullopt;
      if (v) {
        a.protect_reads = *v;
      } else {
        d_.error(f.value.Mark(), fmt::format("'protect_reads' in access: expected true or "
                                             "false, got {}",
                                             describe_node(f.value)));
      }
    } else {
      unknown_key(f, "access", kAccessKeys);
    }
  }
}

void Reader::transport_settings(const Field& section) {
  if (!mapping_or_empty(section) || section.value.IsNull()) return;
  TransportSettings& t = parsed_.config.transports;
  const std::string where = "transports";
  for (const Field& f : fields_of(section.value, where, d_)) {
    if (f.key == "default") {
      if (auto v = choice(f, where, transports_)) t.default_transport = *v;
    } else if (f.key == "pipeline_depth") {
      if (auto v = integer(f, where, 1, 4096))
        t.endpoint.pipeline_depth = static_cast<std::uint32_t>(*v);
    } else if (f.key == "max_message_size") {
      if (auto v = integer(f, where, 1, 1LL << 30)) {
        t.endpoint.max_message_size = static_cast<std::uint32_t>(*v);
      }
    } else if (f.key == "recv_buffers") {
      if (auto v = integer(f, where, 1, 65536))
        t.endpoint.recv_buffers = static_cast<std::uint32_t>(*v);
    } else if (f.key == "socket_buffer_kb") {
      if (auto v = integer(f, where, 4, 1LL << 20)) {
        t.endpoint.socket_buffer_bytes = static_cast<std::size_t>(*v) * 1024;
      }
    } else if (f.key == "payload_crc") {
      const auto v = f.value.IsScalar() ? parse_boolean(f.value.Scalar()) : std::nullopt;
      if (v) {
        t.endpoint.payload_crc = *v;
      } else {
        d_.error(f.value.Mark(), fmt::format("'payload_crc' in transports: expected true or "
                                             "false, got {}",
                                             describe_node(f.value)));
      }
    } else if (f.key == "ucx_tls") {
      if (auto v = text(f, where)) t.backends.ucx.tls = *v;
    } else if (f.key == "ofi_provider") {
      if (auto v = text(f, where)) t.backends.ofi.provider = *v;
    } else if (f.key == "mpi_completion") {
      if (auto v = choice(f, where, kMpiCompletions)) t.backends.mpi.completion = *v;
    } else {
      unknown_key(f, where, kTransportKeys);
    }
  }
}

void Reader::libraries(const Field& f) {
  if (!f.value.IsSequence()) {
    d_.error(f.value.Mark(),
             fmt::format("'libraries': expected a list of paths, got {}", describe_node(f.value)));
    return;
  }
  for (const YAML::Node& item : f.value) {
    if (!item.IsScalar() || item.Scalar().empty()) {
      d_.error(item.Mark(),
               fmt::format("'libraries': expected a path, got {}", describe_node(item)));
      continue;
    }
    if (extensible_ == nullptr) {
      d_.error(item.Mark(), "'libraries': this program takes no libraries of application types");
      continue;
    }
    const std::string path = beside_config(item.Scalar());
    if (auto loaded = load_app_library(path, *extensible_); !loaded) {
      d_.error(item.Mark(), "'libraries': " + loaded.error().message());
      continue;
    }
    parsed_.config.libraries.push_back(path);
  }
}

std::string Reader::beside_config(const std::string& path) const {
  std::filesystem::path p(path);
  if (p.is_relative()) p = std::filesystem::path(parsed_.config.file).parent_path() / p;
  return p.lexically_normal().string();
}

std::optional<std::string> Reader::absolute_path(const Field& f, const std::string& where) {
  auto v = text(f, where);
  if (v && !std::filesystem::path(*v).is_absolute()) {
    d_.error(f.value.Mark(), fmt::format("'{}' in {}: '{}' is not an absolute path (it is a "
                                         "path on that host)",
                                         f.key, where, *v));
    return std::nullopt;
  }
  return v;
}

void Reader::hooks_settings(const Field& section) {
  if (!mapping_or_empty(section) || section.value.IsNull()) return;
  HooksSettings& h = parsed_.config.hooks;
  const std::pair<const char*, std::vector<std::string>*> lists[] = {
      {"before_configure", &h.configure.before}, {"after_configure", &h.configure.after},
      {"before_enable", &h.enable.before},       {"after_enable", &h.enable.after},
      {"before_halt", &h.halt.before},           {"after_halt", &h.halt.after}};
  for (const Field& f : fields_of(section.value, "hooks", d_)) {
    if (f.key == "timeout_s") {
      if (auto v = integer(f, "hooks", 1, 3600)) h.timeout_s = static_cast<std::uint32_t>(*v);
      continue;
    }
    const auto* list = std::find_if(std::begin(lists), std::end(lists),
                                    [&](const auto& l) { return f.key == l.first; });
    if (list == std::end(lists)) {
      unknown_key(f, "hooks", kHookKeys);
    } else if (f.value.IsScalar()) {
      // One command, or a list of them run in order.
      if (auto v = text(f, "hooks")) *list->second = {*v};
    } else if (auto v = text_list(f, "hooks")) {
      *list->second = std::move(*v);
    }
  }
}

std::optional<std::vector<std::string>> Reader::text_list(const Field& f,
                                                          const std::string& where) {
  if (!f.value.IsSequence()) {
    d_.error(f.value.Mark(), fmt::format("'{}' in {}: expected a list of strings, got {}", f.key,
                                         where, describe_node(f.value)));
    return std::nullopt;
  }
  std::vector<std::string> out;
  for (const auto& item : f.value) {
    if (!item.IsScalar() || item.Scalar().empty()) {
      d_.error(item.Mark(), fmt::format("'{}' in {}: expected a non-empty string, got {}", f.key,
                                        where, describe_node(item)));
      return std::nullopt;
    }
    out.push_back(item.Scalar());
  }
  return out;
}

void read_document(const YAML::Node& root, const AppRegistry& registry, AppRegistry* extensible,
                   ParsedConfig& parsed, Diagnostics& d) {
  Reader(registry, extensible, parsed, d).document(root);
}

}  // namespace daqflow::runtime::detail
