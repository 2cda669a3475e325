// The configuration's hosts and their launchers, and its faults (config_reader.hpp).

#include <algorithm>

#include "runtime/config_reader.hpp"

namespace daqflow::runtime::detail {

void Reader::list_section(const Field& section,
                          void (Reader::*item)(const YAML::Node&, std::size_t)) {
  if (section.value.IsNull()) return;
  if (!section.value.IsSequence()) {
    d_.error(section.value.Mark(),
             fmt::format("'{}' must be a list, got {}", section.key, describe_node(section.value)));
    return;
  }
  for (std::size_t i = 0; i < section.value.size(); ++i) (this->*item)(section.value[i], i);
}

void Reader::host(const YAML::Node& node, std::size_t i) {
  std::string where = fmt::format("host #{}", i + 1);
  if (!node.IsMap()) {
    d_.error(node.Mark(), fmt::format("{} must be a mapping with address and launcher, got {}",
                                      where, describe_node(node)));
    return;
  }
  HostConfig h;
  h.location = d_.location(node.Mark());
  const auto fields = fields_of(node, where, d_);
  if (const Field* f = find_field(fields, "address")) {
    if (f->value.IsSequence()) {
      if (auto v = text_list(*f, where)) h.addresses = *v;
    } else if (auto v = text(*f, where)) {
      h.addresses = {*v};
    }
    if (h.addresses.size() == 1) where = fmt::format("host '{}'", h.addresses.front());
  } else {
    d_.error(node.Mark(), fmt::format("missing required key 'address' in {} (the contexts' "
                                      "host it describes)",
                                      where));
  }
  for (const Field& f : fields) {
    if (f.key == "address") continue;
    if (f.key == "launcher") {
      if (auto v = choice(f, where, kLaunchers)) {
        h.launcher = static_cast<LauncherKind>(std::find(kLaunchers.begin(), kLaunchers.end(), *v) -
                                               kLaunchers.begin());
      }
    } else if (f.key == "daqflow") {
      if (auto v = absolute_path(f, where)) h.daqflow = *v;
    } else if (f.key == "workdir") {
      if (auto v = absolute_path(f, where)) h.workdir = *v;
    } else if (f.key == "log_dir") {
      if (auto v = absolute_path(f, where)) h.log_dir = *v;
    } else if (f.key == "control_bind") {
      if (auto v = text(f, where)) {
        if (is_ip_address(*v)) {
          h.control_bind = *v;
        } else {
          d_.error(f.value.Mark(), fmt::format("'control_bind' in {}: '{}' is not an IPv4 or "
                                               "IPv6 address",
                                               where, *v));
        }
      }
    } else if (f.key == "lease_s") {
      if (auto v = integer(f, where, 2, 3600)) h.lease_s = static_cast<std::uint32_t>(*v);
    } else if (f.key == "ssh") {
      ssh_settings(f, where, h.ssh);
    } else if (f.key == "supervisor") {
      supervisor_settings(f, where, h.supervisor);
    } else if (f.key == "slurm") {
      slurm_settings(f, where, h.slurm);
    } else {
      unknown_key(f, where, kHostKeys);
    }
  }
  for (const char* section : {"ssh", "supervisor", "slurm"}) {
    const Field* f = find_field(fields, section);
    if (f != nullptr && std::string(to_string(h.launcher)) != section) {
      d_.error(f->key_node.Mark(), fmt::format("'{}' in {}: the host's launcher is {}, not {}",
                                               section, where, to_string(h.launcher), section));
    }
  }
  for (const auto& address : h.addresses) {
    const std::string canonical = canonical_host(address);
    for (const auto& other : parsed_.config.hosts) {
      for (const auto& a : other.addresses) {
        if (canonical_host(a) == canonical) {
          d_.error(node.Mark(), fmt::format("{}: address '{}' is already described by the host "
                                            "at {}",
                                            where, address, other.location.str()));
        }
      }
    }
  }
  parsed_.config.hosts.push_back(std::move(h));
}

void Reader::ssh_settings(const Field& section, const std::string& host, SshSettings& ssh) {
  if (!mapping_or_empty(section) || section.value.IsNull()) return;
  const std::string where = "ssh of " + host;
  for (const Field& f : fields_of(section.value, where, d_)) {
    if (f.key == "destination") {
      if (auto v = text(f, where)) ssh.destination = *v;
    } else if (f.key == "user") {
      if (auto v = text(f, where)) ssh.user = *v;
    } else if (f.key == "port") {
      if (auto v = integer(f, where, 1, kMaxPort)) ssh.port = static_cast<std::uint16_t>(*v);
    } else if (f.key == "options") {
      if (auto v = text_list(f, where)) ssh.options = *v;
    } else {
      unknown_key(f, where, kSshKeys);
    }
  }
}

void Reader::supervisor_settings(const Field& section, const std::string& host,
                                 SupervisorSettings& s) {
  if (!mapping_or_empty(section) || section.value.IsNull()) return;
  const std::string where = "supervisor of " + host;
  for (const Field& f : fields_of(section.value, where, d_)) {
    if (f.key == "url") {
      if (auto v = text(f, where)) {
        if (v->rfind("http://", 0) == 0 || v->rfind("https://", 0) == 0) {
          s.url = *v;
        } else {
          d_.error(f.value.Mark(), fmt::format("'url' in {}: '{}' is not an http:// or https:// "
                                               "URL (supervisord's inet_http_server)",
                                               where, *v));
        }
      }
    } else if (f.key == "user") {
      if (auto v = text(f, where)) s.user = *v;
    } else if (f.key == "password_file") {
      if (auto v = text(f, where)) s.password_file = beside_config(*v);
    } else {
      unknown_key(f, where, kSupervisorKeys);
    }
  }
}

void Reader::slurm_settings(const Field& section, const std::string& host, SlurmSettings& s) {
  if (!mapping_or_empty(section) || section.value.IsNull()) return;
  const std::string where = "slurm of " + host;
  for (const Field& f : fields_of(section.value, where, d_)) {
    if (f.key == "node") {
      if (auto v = text(f, where)) s.node = *v;
    } else if (f.key == "partition") {
      if (auto v = text(f, where)) s.partition = *v;
    } else if (f.key == "account") {
      if (auto v = text(f, where)) s.account = *v;
    } else {
      unknown_key(f, where, kSlurmKeys);
    }
  }
}

void Reader::fault(const YAML::Node& node, std::size_t i) {
  const std::string where = fmt::format("fault #{}", i + 1);
  if (!node.IsMap()) {
    d_.error(node.Mark(), fmt::format("{} must be a mapping with from, to and one of {}, got {}",
                                      where, join_names(kFaultKinds), describe_node(node)));
    return;
  }
  transport::FaultRule rule;
  FaultMarks marks;
  marks.node = node.Mark();
  std::vector<std::string> kinds;
  std::optional<YAML::Mark> for_mark;
  for (const Field& f : fields_of(node, where, d_)) {
    if (f.key == "from" || f.key == "to") {
      if (auto v = name(f, where)) (f.key == "from" ? marks.from : marks.to) = *v;
      (f.key == "from" ? marks.from_mark : marks.to_mark) = f.value.Mark();
    } else if (f.key == "delay_ms") {
      kinds.push_back(f.key);
      rule.kind = transport::FaultRule::Kind::delay;
      if (auto v = integer(f, where, 1, 3'600'000)) rule.delay = std::chrono::milliseconds(*v);
    } else if (f.key == "cut_ms") {
      kinds.push_back(f.key);
      rule.kind = transport::FaultRule::Kind::cut;
      if (auto v = integer(f, where, 0, 3'600'000)) rule.duration = std::chrono::milliseconds(*v);
    } else if (f.key == "stall_ms") {
      kinds.push_back(f.key);
      rule.kind = transport::FaultRule::Kind::stall;
      if (auto v = integer(f, where, 1, 3'600'000)) rule.duration = std::chrono::milliseconds(*v);
    } else if (f.key == "corrupt" || f.key == "reset") {
      kinds.push_back(f.key);
      rule.kind = f.key == "corrupt" ? transport::FaultRule::Kind::corrupt
                                     : transport::FaultRule::Kind::reset;
      const auto v = f.value.IsScalar() ? parse_boolean(f.value.Scalar()) : std::nullopt;
      if (v != std::optional<bool>(true)) {
        d_.error(f.value.Mark(), fmt::format("'{}' in {}: expected true (leave the fault out "
                                             "otherwise), got {}",
                                             f.key, where, describe_node(f.value)));
      }
    } else if (f.key == "after_messages") {
      if (auto v = integer(f, where, 0, 1LL << 62)) {
        rule.after_messages = static_cast<std::uint64_t>(*v);
      }
    } else if (f.key == "after_ms") {
      if (auto v = integer(f, where, 0, 3'600'000)) rule.after = std::chrono::milliseconds(*v);
    } else if (f.key == "for_ms") {
      for_mark = f.key_node.Mark();
      if (auto v = integer(f, where, 1, 3'600'000)) rule.duration = std::chrono::milliseconds(*v);
    } else {
      unknown_key(f, where, kFaultKeys);
    }
  }
  if (kinds.size() != 1) {
    d_.error(node.Mark(),
             fmt::format("{} must have exactly one of {}, got {}", where, join_names(kFaultKinds),
                         kinds.empty() ? std::string("none") : join_names(kinds)));
  }
  if (for_mark && rule.kind != transport::FaultRule::Kind::delay) {
    d_.error(*for_mark, fmt::format("'for_ms' in {}: only a delay lasts for_ms (a cut and a stall "
                                    "say how long in cut_ms and stall_ms; a corruption is one "
                                    "message, a reset one moment)",
                                    where));
  }
  for (const char* key : {"from", "to"}) {
    if (!node[key])
      d_.error(node.Mark(), fmt::format("missing required key '{}' in {}", key, where));
  }
  parsed_.config.faults.push_back(rule);
  parsed_.faults.push_back(std::move(marks));
}

}  // namespace daqflow::runtime::detail
