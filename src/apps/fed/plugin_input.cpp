// A RU's (or the EVM's) fragments from a readout plugin (`input: {kind: plugin}`,
// include/daqflow/readout_plugin.h): each event's fragments as the plugin writes them into the
// RU's chunk, their tags checked against the event being built, complete FED fragments verified
// and payloads wrapped in place in their FED header and trailer.

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <cstring>
#include <vector>

#include "daqflow/wire/evb.hpp"
#include "daqflow/wire/fed.hpp"
#include "readout_plugin.hpp"
#include "sources.hpp"

namespace daqflow::apps::fed {

namespace {

constexpr std::uint64_t kLoggedPluginErrors = 10;
constexpr std::uint8_t kPluginEventType = 1;

class PluginInput final : public FragmentSource {
 public:
  PluginInput(std::unique_ptr<ReadoutPlugin> plugin, std::vector<std::uint16_t> fed_ids,
              const FedSettings::Input& input, EventNumbering numbering, std::uint64_t resync_every)
      : plugin_(std::move(plugin)),
        fed_ids_(std::move(fed_ids)),
        fragments_(fed_ids_.size()),
        payloads_(plugin_->info().format == DAQFLOW_READOUT_PAYLOADS),
        crc_check_every_(input.crc_check_every),
        mark_(input.on_error == "mark"),
        numbering_(numbering),
        resync_every_(resync_every) {}

  Produced produce(std::uint64_t event, std::span<std::byte> out) override;
  [[nodiscard]] std::size_t max_super_fragment_size() const override {
    return plugin_->info().max_event_bytes + (payloads_ ? wrapping() : 0);
  }
  [[nodiscard]] std::size_t fed_count() const override { return fed_ids_.size(); }
  [[nodiscard]] FragmentSourceStats stats() const override;
  [[nodiscard]] std::string failure() const override { return failure_; }
  void stop() override { plugin_->stop(); }

 private:
  [[nodiscard]] std::size_t wrapping() const { return fed_ids_.size() * wire::kFedMinFragmentSize; }
  // The problem with fragment i of the event as described, or empty.
  [[nodiscard]] std::string check_tags(std::size_t i, std::uint32_t l1_id) const;
  [[nodiscard]] std::string verify(std::span<const std::byte> fragment, std::size_t i,
                                   std::uint64_t event, std::uint32_t l1_id);
  [[nodiscard]] std::string wrap(std::span<std::byte> out, std::uint64_t event, std::uint32_t l1_id,
                                 std::size_t& total);
  Produced fail(std::uint64_t event, const std::string& what);
  // A bad fragment: fails the input, or (on_error mark) marks the event corrupted.
  [[nodiscard]] bool tolerate(std::uint64_t event, const std::string& what);

  std::unique_ptr<ReadoutPlugin> plugin_;
  std::vector<std::uint16_t> fed_ids_;
  std::vector<daqflow_readout_fragment> fragments_;
  bool payloads_;
  std::uint32_t crc_check_every_;
  bool mark_;
  EventNumbering numbering_;
  std::uint64_t resync_every_;
  std::string failure_;
  std::atomic<std::uint64_t> events_{0};
  std::atomic<std::uint64_t> bytes_{0};
  std::atomic<std::uint64_t> errors_{0};
  std::atomic<std::uint64_t> crc_checked_{0};
};

Produced PluginInput::fail(std::uint64_t event, const std::string& what) {
  failure_ = fmt::format("{}: {}: {}", plugin_->name(), event_name(event), what);
  spdlog::error("{}", failure_);
  return {Produced::Status::failed, 0, 0};
}

bool PluginInput::tolerate(std::uint64_t event, const std::string& what) {
  errors_.store(errors_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  if (!mark_) return false;
  if (errors_.load(std::memory_order_relaxed) <= kLoggedPluginErrors) {
    spdlog::warn("{}: {}: {} (event marked corrupted)", plugin_->name(), event_name(event), what);
  }
  return true;
}

std::string PluginInput::check_tags(std::size_t i, std::uint32_t l1_id) const {
  const daqflow_readout_fragment& f = fragments_[i];
  if (f.source_id != fed_ids_[i]) {
    return fmt::format("fragment {} is tagged source {}, FED {} expected there", i, f.source_id,
                       fed_ids_[i]);
  }
  if ((f.event & wire::kFedL1IdMask) != l1_id) {
    return fmt::format("FED {}: fragment tagged event number {}, the event built carries {}",
                       f.source_id, f.event & wire::kFedL1IdMask, l1_id);
  }
  return {};
}

std::string PluginInput::verify(std::span<const std::byte> fragment, std::size_t i,
                                std::uint64_t event, std::uint32_t l1_id) {
  wire::FedCheck expect;
  expect.source_id = fed_ids_[i];
  expect.event = l1_id;
  expect.verify_crc = crc_check_every_ != 0 && event % crc_check_every_ == 0;
  if (expect.verify_crc) crc_checked_.fetch_add(1, std::memory_order_relaxed);
  const wire::FedStatus status = wire::check_fragment(fragment, expect);
  if (status == wire::FedStatus::ok) return {};
  return fmt::format("FED {}: {}", fed_ids_[i], wire::to_string(status));
}

// Payloads written one after the other become fragments in place: from the last to the first,
// each moves up by the headers and trailers before it and gets its own.
std::string PluginInput::wrap(std::span<std::byte> out, std::uint64_t event, std::uint32_t l1_id,
                              std::size_t& total) {
  std::size_t payload_end = 0;
  for (const auto& f : fragments_) {
    if (f.size % 8 != 0) {
      return fmt::format("FED {}: payload of {} bytes, not a whole number of 64-bit words",
                         f.source_id, f.size);
    }
    if (f.size + wire::kFedMinFragmentSize > wire::kFedMaxFragmentSize) {
      return fmt::format("FED {}: payload of {} bytes, more than a FED fragment holds", f.source_id,
                         f.size);
    }
    payload_end += f.size;
  }
  total = payload_end + wrapping();
  std::size_t end = total;
  for (std::size_t i = fragments_.size(); i-- > 0;) {
    const std::size_t size = fragments_[i].size;
    payload_end -= size;
    const std::size_t at = end - size - wire::kFedMinFragmentSize;
    std::byte* fragment = out.data() + at;
    std::memmove(fragment + wire::kFedHeaderSize, out.data() + payload_end, size);
    wire::FedHeaderFields h;
    h.event_type = kPluginEventType;
    h.l1_id = l1_id;
    h.bx_id = static_cast<std::uint16_t>(event % wire::kLhcBunches);
    h.source_id = fed_ids_[i];
    (void)wire::encode_header(h, std::span<std::byte, 8>(fragment, 8));
    (void)wire::finish_fragment({fragment, size + wire::kFedMinFragmentSize});
    end = at;
  }
  return {};
}

Produced PluginInput::produce(std::uint64_t event, std::span<std::byte> out) {
  const std::size_t reserve = payloads_ ? wrapping() : 0;
  if (out.size() < reserve + 8) return {Produced::Status::no_room, 0, 0};
  daqflow_readout_request r{};
  r.index = event;
  r.l1_id = l1_id_of(numbering_, event, resync_every_);
  r.data = out.data();
  r.capacity = out.size() - reserve;
  r.fragments = fragments_.data();
  switch (plugin_->produce(r)) {
    case DAQFLOW_READOUT_READY:
      break;
    case DAQFLOW_READOUT_NOT_READY:
      return {Produced::Status::not_ready, 0, 0};
    case DAQFLOW_READOUT_NO_ROOM:
      if (r.size + reserve > max_super_fragment_size()) {
        return fail(event, fmt::format("asks for {} bytes, more than the max_event_bytes ({}) its "
                                       "init gave",
                                       r.size, plugin_->info().max_event_bytes));
      }
      return {Produced::Status::no_room, 0, 0};
    case DAQFLOW_READOUT_FAILED:
      return fail(event, plugin_->error());
    default:
      return fail(event, "produce returned an unknown status");
  }
  if (r.count != fed_ids_.size()) {
    return fail(event, fmt::format("{} fragments described, the RU reads {} FEDs", r.count,
                                   fed_ids_.size()));
  }
  std::size_t written = 0;
  for (const auto& f : fragments_) written += f.size;
  if (written != r.size || r.size > r.capacity) {
    return fail(event, fmt::format("the fragments' sizes add up to {} bytes, {} written into {}",
                                   written, r.size, r.capacity));
  }
  std::uint32_t flags = 0;
  std::size_t total = r.size;
  for (std::size_t i = 0; i < fragments_.size(); ++i) {
    if (std::string problem = check_tags(i, r.l1_id); !problem.empty()) {
      if (!tolerate(event, problem)) return fail(event, problem);
      flags |= wire::kEventCorrupted;
    }
  }
  if (payloads_) {
    if (std::string problem = wrap(out, event, r.l1_id, total); !problem.empty()) {
      return fail(event, problem);
    }
  } else {
    std::size_t at = 0;
    for (std::size_t i = 0; i < fragments_.size(); ++i) {
      const std::span<const std::byte> fragment(out.data() + at, fragments_[i].size);
      at += fragments_[i].size;
      if (std::string problem = verify(fragment, i, event, r.l1_id); !problem.empty()) {
        if (!tolerate(event, problem)) return fail(event, problem);
        flags |= wire::kEventCorrupted;
      }
    }
  }
  events_.store(events_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  bytes_.store(bytes_.load(std::memory_order_relaxed) + total, std::memory_order_relaxed);
  return {Produced::Status::ready, static_cast<std::uint32_t>(total), flags};
}

FragmentSourceStats PluginInput::stats() const {
  FragmentSourceStats s;
  s.events = events_.load(std::memory_order_relaxed);
  s.fragments = s.events * fed_ids_.size();
  s.bytes = bytes_.load(std::memory_order_relaxed);
  s.fragment_errors = errors_.load(std::memory_order_relaxed);
  s.crc_checked = crc_checked_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace

Result<std::unique_ptr<FragmentSource>> make_plugin_input(const FedSettings& fed,
                                                          std::uint32_t ru_index,
                                                          const std::string& app,
                                                          EventNumbering numbering,
                                                          std::uint64_t resync_every) {
  auto first = fed.first_id(ru_index);
  if (!first) return first.error();
  ReadoutPlugin::Setup setup;
  setup.app = app;
  setup.library = fed.input.library;
  setup.config = fed.input.config;
  setup.what = DAQFLOW_READOUT_FRAGMENTS;
  for (std::uint32_t i = 0; i < fed.feds; ++i) {
    setup.source_ids.push_back(static_cast<std::uint16_t>(*first + i));
  }
  auto plugin = ReadoutPlugin::load(setup);
  if (!plugin) return plugin.error();
  const daqflow_readout_info& info = (*plugin)->info();
  if (info.format != DAQFLOW_READOUT_FED_FRAGMENTS && info.format != DAQFLOW_READOUT_PAYLOADS) {
    return Error(ErrorCode::invalid_argument,
                 fmt::format("{}: init gave format {}, neither DAQFLOW_READOUT_FED_FRAGMENTS nor "
                             "DAQFLOW_READOUT_PAYLOADS",
                             (*plugin)->name(), info.format));
  }
  if (info.max_event_bytes < 8 || info.max_event_bytes > std::uint64_t{1} << 31) {
    return Error(ErrorCode::invalid_argument,
                 fmt::format("{}: init gave max_event_bytes {} (8 bytes to 2 GiB)",
                             (*plugin)->name(), info.max_event_bytes));
  }
  std::vector<std::uint16_t> ids = setup.source_ids;
  return std::unique_ptr<FragmentSource>(
      new PluginInput(std::move(*plugin), std::move(ids), fed.input, numbering, resync_every));
}

}  // namespace daqflow::apps::fed
