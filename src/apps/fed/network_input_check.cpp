// The network input's validation of each received fragment and its error reports, which name
// the FED and the event ("FED 1203 event 5121: CRC mismatch (trailer 0x1a2b, computed 0x3c4d)").
// Runs on the I/O thread; the error path allocates (to format the report), the good path does
// not.

#include <fmt/format.h>

#include "daqflow/core/log.hpp"
#include "daqflow/wire/endian.hpp"
#include "daqflow/wire/evb.hpp"
#include "daqflow/wire/fed.hpp"
#include "daqflow/wire/ferol.hpp"
#include "network_input_impl.hpp"

namespace daqflow::apps::fed {
namespace {

// Errors logged in full before the log only notes every kLogEvery-th.
constexpr std::uint64_t kLoggedErrors = 20;
constexpr std::uint64_t kLogEvery = 1000;

// What is wrong with a fragment that check_fragment() refused, with the values at fault.
std::string describe(wire::FedStatus status, std::span<const std::byte> fragment,
                     std::uint16_t fed_id, std::uint64_t event) {
  wire::FedHeaderFields header;
  wire::FedTrailerFields trailer;
  (void)wire::decode_header(fragment, header);  // fields stay 0 where it cannot
  const bool has_trailer =
      fragment.size() >= wire::kFedTrailerSize &&
      wire::decode_trailer(fragment.subspan(fragment.size() - wire::kFedTrailerSize), trailer) ==
          wire::FedStatus::ok;
  switch (status) {
    case wire::FedStatus::bad_crc:
      return fmt::format("CRC mismatch (trailer 0x{:04x}, computed 0x{:04x})", trailer.crc,
                         wire::fragment_crc(fragment));
    case wire::FedStatus::wrong_source:
      return fmt::format("source id {} in the FED header, expected {}", header.source_id, fed_id);
    case wire::FedStatus::wrong_event:
      return fmt::format("event number out of sequence (L1 id {} in the FED header, expected {})",
                         header.l1_id, wire::fed_l1_id(event));
    case wire::FedStatus::length_mismatch:
      return fmt::format("trailer length {} words, but the fragment has {} words",
                         has_trailer ? trailer.length_words : 0, fragment.size() / 8);
    case wire::FedStatus::bad_boe:
      return fmt::format("no FED header (BOE 0x{:x}, expected 0x{:x})",
                         fragment.size() >= 8 ? wire::load_le64(fragment.data()) >> 60 : 0,
                         wire::kFedBoe);
    case wire::FedStatus::bad_eoe:
      return fmt::format(
          "no FED trailer (EOE 0x{:x}, expected 0x{:x})",
          fragment.size() >= 8 ? wire::load_le64(fragment.data() + fragment.size() - 8) >> 60 : 0,
          wire::kFedEoe);
    default:
      return fmt::format("bad fragment ({})", wire::to_string(status));
  }
}

}  // namespace

std::string NetworkInput::take_event_number(Fed& fed, std::span<const std::byte> fragment) {
  wire::FedHeaderFields header;
  if (wire::decode_header(fragment, header) != wire::FedStatus::ok) {
    // Reported already; the sequence moves on by one, so that the next fragment is judged alone.
    (void)fed.sequence.take(fed.sequence.next_number());
    return {};
  }
  const CmsEventSequence::Step step = fed.sequence.take(header.l1_id);
  if (!CmsEventSequence::is_error(step)) return {};
  return "event number out of sequence: " + fed.sequence.describe(step, header.l1_id);
}

std::uint32_t NetworkInput::check(Fed& fed, std::uint64_t frame_event, std::uint16_t frame_fed,
                                  std::span<const std::byte> fragment, bool& ok) {
  const std::uint64_t event = fed.next_event;
  const std::uint32_t every = settings_.crc_check_every;
  const bool crc_due = every != 0 && event % every == 0;
  const bool cms = settings_.numbering == EventNumbering::cms;
  wire::FedHeaderFields header;
  const bool has_header = wire::decode_header(fragment, header) == wire::FedStatus::ok;
  // Reports name the L1 id of the fragment's FED header (or, without one, of its FEROL blocks).
  const bool ferol = settings_.framing == FedFraming::ferol;
  const EventId id =
      event_of(fed, has_header ? std::optional<std::uint32_t>(header.l1_id)
                    : ferol ? std::optional<std::uint32_t>(static_cast<std::uint32_t>(frame_event))
                            : std::nullopt);
  std::string problem;
  // A FEROL header carries the FED's L1 id (with CMS numbering whatever the count is: the
  // sequence is checked below), a frame header the event's index on the stream.
  std::uint64_t expected_number = event & kFedFrameMaxEvent;
  if (ferol) expected_number = cms && has_header ? header.l1_id : wire::fed_l1_id(event);
  if (frame_fed != fed.id) {
    problem = fmt::format("frame header names FED {} (wrong connection?)", frame_fed);
  } else if (frame_event != expected_number) {
    problem = fmt::format("event number out of sequence (the {} header says event {}, {} {})",
                          ferol ? "FEROL" : "frame", frame_event,
                          ferol && cms ? "the FED header" : "expected", expected_number);
  } else {
    wire::FedCheck expect;
    expect.source_id = fed.id;
    if (!cms) expect.event = event;
    expect.verify_crc = crc_due;
    const wire::FedStatus status = wire::check_fragment(fragment, expect);
    if (crc_due) crc_checked_.fetch_add(1, std::memory_order_relaxed);
    if (status != wire::FedStatus::ok) problem = describe(status, fragment, fed.id, event);
  }
  if (cms) {
    // Every fragment moves the sequence on, good or bad, so that one bad number is one error.
    std::string sequence = take_event_number(fed, fragment);
    if (problem.empty()) problem = std::move(sequence);
  }
  if (problem.empty()) return 0;
  const bool fatal = settings_.on_error == OnFragmentError::fail;
  report(fed, id, problem, fatal);
  if (fatal) {
    ok = false;
    fed.dead = true;
    return 0;
  }
  return wire::kEventCorrupted;
}

EventId NetworkInput::event_of(const Fed& fed, std::optional<std::uint32_t> l1_id) const {
  if (settings_.numbering == EventNumbering::index) return event_id_of(fed.next_event);
  return l1_id ? fed.sequence.peek(*l1_id) : fed.sequence.expected();
}

void NetworkInput::report(const Fed& fed, EventId event, const std::string& what, bool fatal) {
  const std::uint64_t count = errors_.fetch_add(1, std::memory_order_relaxed) + 1;
  const std::string text = fmt::format("FED {} {}: {}", fed.id, event_name(event), what);
  if (fatal) {
    spdlog::error("{}: {}", settings_.name, text);
    set_failure(text);
  } else if (count <= kLoggedErrors || count % kLogEvery == 0) {
    spdlog::warn("{}: {} (event marked corrupted; {} fragment errors so far{})", settings_.name,
                 text, count,
                 count == kLoggedErrors ? ", further ones are logged every 1000th" : "");
  }
}

void NetworkInput::fail_stream(Fed& fed, const std::string& what,
                               std::optional<std::uint32_t> l1_id) {
  if (!l1_id && fed.next_packet > 0) l1_id = fed.block_event;
  if (!l1_id && fed.next_packet == 0 && settings_.framing == FedFraming::ferol && fed.chunk &&
      fed.read_pos - fed.raw_pos >= wire::kFerolHeaderSize) {
    // Within the first block: its header is in.
    wire::FerolHeader block;
    if (wire::decode_ferol_header({fed.chunk.data() + fed.raw_pos, wire::kFerolHeaderSize},
                                  block) == wire::FerolStatus::ok) {
      l1_id = block.event;
    }
  }
  report(fed, event_of(fed, l1_id), what, true);
  fed.dead = true;
  close_connection(fed);
}

}  // namespace daqflow::apps::fed
