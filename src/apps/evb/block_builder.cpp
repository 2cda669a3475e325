#include "daqflow/apps/evb/block_builder.hpp"

#include <algorithm>
#include <cstring>

#include "daqflow/apps/fed/event_numbers.hpp"
#include "daqflow/apps/fed/super_fragment_check.hpp"
#include "daqflow/wire/endian.hpp"

namespace daqflow::apps::evb {

BlockBuilder::BlockBuilder(BuilderSettings settings) : settings_(std::move(settings)) {}

Result<std::unique_ptr<BlockBuilder>> BlockBuilder::create(BuilderSettings settings) {
  if (settings.rus.empty()) return Error("no RU to build from");
  if (settings.feds.size() != settings.rus.size()) return Error("one FED count per RU is needed");
  if (settings.slots == 0) return Error("at least one block in flight is needed");
  if (settings.max_block_events == 0 || settings.max_block_events > wire::kMaxEventsPerBlock) {
    return Error("events per block must be 1.." + std::to_string(wire::kMaxEventsPerBlock));
  }
  std::unique_ptr<BlockBuilder> b(new BlockBuilder(std::move(settings)));
  const auto& s = b->settings_;
  transport::AppIndex top = 0;
  for (const auto ru : s.rus) top = std::max(top, ru);
  b->position_.assign(std::size_t{top} + 1, -1);
  for (std::size_t i = 0; i < s.rus.size(); ++i) {
    if (b->position_[s.rus[i]] >= 0) return Error("a RU is listed twice");
    b->position_[s.rus[i]] = static_cast<int>(i);
  }
  b->lost_.assign(s.rus.size(), false);
  b->slots_.resize(s.slots);
  for (Slot& slot : b->slots_) {
    slot.parts.resize(s.rus.size());
    slot.entries.resize(s.rus.size() * s.max_block_events);
  }
  b->scratch_.resize(s.max_block_events);
  b->cursors_.resize(s.rus.size());
  b->jobs_.reserve(b->max_pieces());
  b->job_event_.reserve(b->max_pieces());
  b->job_ru_.reserve(b->max_pieces());
  b->verdicts_.resize(b->max_pieces());
  return b;
}

int BlockBuilder::position_of(transport::AppIndex ru) const {
  return ru < position_.size() ? position_[ru] : -1;
}

std::size_t BlockBuilder::max_pieces() const {
  return std::size_t{settings_.max_block_events} * settings_.rus.size();
}

std::size_t BlockBuilder::max_buffers() const {
  return settings_.rus.size() * transport::kMaxSegments;
}

PartOutcome BlockBuilder::on_part(transport::AppIndex from, transport::Message& m,
                                  std::int64_t now_ns, wire::PayloadStatus* detail) {
  const int position = position_of(from);
  if (position < 0) return PartOutcome::unknown;
  const auto r = static_cast<std::size_t>(position);
  if (m.segment_count == 0) {
    if (detail != nullptr) *detail = wire::PayloadStatus::wrong_size;
    return PartOutcome::malformed;
  }
  wire::BlockHeader h;
  const wire::PayloadStatus st = wire::decode_block(m.segments[0].bytes(), m.size(), h, scratch_);
  if (st != wire::PayloadStatus::ok || h.ru != from) {
    if (detail != nullptr) *detail = st;  // ok here: the header names another RU
    return PartOutcome::malformed;
  }

  Slot* slot = nullptr;
  for (Slot& s : slots_) {
    if (s.used && s.id == h.block_id) {
      slot = &s;
      break;
    }
  }
  PartOutcome outcome = PartOutcome::added;
  if (slot == nullptr) {
    for (std::size_t i = 0; i < recent_count_; ++i) {
      // A higher generation is the block re-assigned (to this BU again): a new block here.
      if (recent_[i].id == h.block_id && h.generation <= recent_[i].generation)
        return PartOutcome::late;
    }
    for (Slot& s : slots_) {
      if (!s.used) {
        slot = &s;
        break;
      }
    }
    if (slot == nullptr) return PartOutcome::no_slot;
    slot->used = true;
    slot->id = h.block_id;
    slot->first = h.first_event;
    slot->count = h.event_count;
    slot->first_id = h.first_id;
    slot->lumi = h.lumi_section;
    slot->received = 0;
    slot->first_ns = now_ns;
    ++open_;
    outcome = PartOutcome::first;
  } else if (slot->first != h.first_event || slot->count != h.event_count ||
             slot->first_id != h.first_id || slot->lumi != h.lumi_section) {
    if (detail != nullptr) *detail = wire::PayloadStatus::bad_count;
    return PartOutcome::malformed;
  }
  Part& part = slot->parts[r];
  if (part.present) {
    // The same data again, re-sent for a re-assignment: the block answers to the newer one.
    part.generation = std::max(part.generation, h.generation);
    return PartOutcome::duplicate;
  }
  part.present = true;
  part.generation = h.generation;
  part.descriptor_size = static_cast<std::uint32_t>(wire::block_descriptor_size(h.event_count));
  part.message.clear();
  part.message.type = m.type;
  part.message.tag = m.tag;
  for (std::uint8_t i = 0; i < m.segment_count; ++i) {
    part.message.segments[i] = std::move(m.segments[i]);
  }
  part.message.segment_count = m.segment_count;
  m.segment_count = 0;
  std::copy_n(scratch_.begin(), h.event_count,
              slot->entries.begin() + static_cast<std::ptrdiff_t>(r * settings_.max_block_events));
  ++slot->received;
  return outcome;
}

bool BlockBuilder::complete(const Slot& s) const {
  for (std::size_t r = 0; r < s.parts.size(); ++r) {
    if (!s.parts[r].present && !lost_[r]) return false;
  }
  return true;
}

int BlockBuilder::ready(std::int64_t now_ns) const {
  int best = -1;
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    const Slot& s = slots_[i];
    if (!s.used) continue;
    if (!complete(s) && now_ns - s.first_ns < settings_.timeout_ns) continue;
    // The oldest block first, so that output follows event order where it can.
    if (best < 0 || s.id < slots_[static_cast<std::size_t>(best)].id) best = static_cast<int>(i);
  }
  return best;
}

void BlockBuilder::ru_lost(std::size_t position) {
  if (position < lost_.size() && !lost_[position]) {
    lost_[position] = true;
    ++lost_count_;
  }
}

std::string BlockBuilder::describe_open() const {
  constexpr std::size_t kShown = 4;
  std::string text;
  std::size_t shown = 0;
  for (const Slot& s : slots_) {
    if (!s.used) continue;
    if (shown++ == kShown) {
      text += ", ...";
      break;
    }
    if (!text.empty()) text += "; ";
    text += "block " + std::to_string(s.id);
    std::string missing;
    for (std::size_t r = 0; r < s.parts.size(); ++r) {
      if (s.parts[r].present || lost_[r]) continue;
      missing += (missing.empty() ? "" : ", ") + ru_name(r);
    }
    text += missing.empty() ? " complete, not built yet" : " waits for " + missing;
  }
  return text;
}

std::string BlockBuilder::ru_name(std::size_t position) const {
  return position < settings_.ru_names.size() ? "RU '" + settings_.ru_names[position] + "'"
                                              : "RU #" + std::to_string(position);
}

namespace {

// What a super-fragment check found, naming the FED whose fragment failed where its header
// can be read.
std::string describe_verdict(const fed::SuperFragmentJob& job, const fed::SuperFragmentVerdict& v,
                             std::uint32_t expected) {
  if (v.status == wire::FedStatus::ok) {
    return std::to_string(v.count) + " fragments, expected " + std::to_string(expected);
  }
  std::string where = "at byte " + std::to_string(v.error_offset);
  wire::FedHeaderFields header;
  if (v.error_offset < job.size &&
      wire::decode_header({job.data + v.error_offset, job.size - v.error_offset}, header) ==
          wire::FedStatus::ok) {
    where = "FED " + std::to_string(header.source_id) + " (" + where + ")";
  }
  return where + ": " + std::string(wire::to_string(v.status));
}

}  // namespace

void BlockBuilder::check_pieces(output::OutputBatch& batch, BuildResult& r) {
  const std::size_t n = jobs_.size();
  fed::check_super_fragments(jobs_, settings_.check_crc, verdicts_);
  for (std::size_t i = 0; i < n; ++i) {
    const fed::SuperFragmentVerdict& v = verdicts_[i];
    const std::uint32_t expected = settings_.feds[job_ru_[i]];
    if (v.status == wire::FedStatus::ok && (expected == 0 || v.count == expected)) continue;
    output::BuiltEvent& ev = batch.events[job_event_[i]];
    if ((ev.flags & wire::kEventCorrupted) == 0) {
      ev.flags |= wire::kEventCorrupted;
      ++r.corrupted;
    }
    if (r.problem.empty()) {
      r.problem = fed::event_name(ev.number) + " from " + ru_name(job_ru_[i]) + ": " +
                  describe_verdict(jobs_[i], v, expected);
    }
  }
}

void BlockBuilder::skip(Cursor& c, const transport::Message& message, std::uint32_t size) {
  std::uint32_t left = size;
  while (left > 0 && c.segment < message.segment_count) {
    const std::uint32_t room = message.segments[c.segment].length - c.offset;
    const std::uint32_t step = std::min(room, left);
    left -= step;
    c.offset += step;
    if (c.offset == message.segments[c.segment].length) {
      ++c.segment;
      c.offset = 0;
    }
  }
}

BuildResult BlockBuilder::build(int index, output::OutputBatch& batch) {
  Slot& s = slots_[static_cast<std::size_t>(index)];
  BuildResult r;
  r.block_id = s.id;
  r.first_ns = s.first_ns;
  batch.clear();
  batch.block_id = s.id;
  const std::size_t nru = s.parts.size();

  Cursor* cursors = cursors_.data();
  jobs_.clear();
  job_event_.clear();
  job_ru_.clear();
  for (std::size_t ru = 0; ru < nru; ++ru) {
    const Part& p = s.parts[ru];
    if (!p.present) {
      if (r.missing_ru < 0) r.missing_ru = static_cast<int>(ru);
      ++r.missing_count;
      continue;
    }
    r.generation = std::max(r.generation, p.generation);
    cursors[ru] = Cursor{0, p.descriptor_size};
  }

  for (std::uint32_t i = 0; i < s.count; ++i) {
    output::BuiltEvent ev;
    ev.number = s.first_id + i;
    ev.lumi = s.lumi;
    ev.first_piece = static_cast<std::uint32_t>(batch.pieces.size());
    for (std::size_t ru = 0; ru < nru; ++ru) {
      Part& p = s.parts[ru];
      if (!p.present) {
        ev.flags |= wire::kEventIncomplete;
        continue;
      }
      const wire::BlockEntry& e = s.entries[ru * settings_.max_block_events + i];
      ev.flags |= e.flags;
      Cursor& c = cursors[ru];
      while (c.segment < p.message.segment_count &&
             c.offset == p.message.segments[c.segment].length) {
        ++c.segment;
        c.offset = 0;
      }
      if (e.size == 0) continue;
      const transport::Segment* seg =
          c.segment < p.message.segment_count ? &p.message.segments[c.segment] : nullptr;
      if (seg == nullptr || c.offset + e.size > seg->length) {
        // Straddles segments (or runs past the end, which decode_block rules out).
        ev.flags |= wire::kEventCorrupted;
        skip(c, p.message, e.size);
        if (r.problem.empty()) {
          r.problem =
              fed::event_name(ev.number) + " from " + ru_name(ru) + " straddles message segments";
        }
        continue;
      }
      const std::byte* data = seg->buffer.data() + seg->offset + c.offset;
      if (settings_.check_fragments) {
        jobs_.push_back(fed::SuperFragmentJob{data, e.size, ev.number});
        job_event_.push_back(i);
        job_ru_.push_back(static_cast<std::uint16_t>(ru));
      }
      batch.pieces.push_back(output::EventPiece{data, e.size});
      ev.size += e.size;
      c.offset += e.size;
    }
    ev.piece_count = static_cast<std::uint32_t>(batch.pieces.size()) - ev.first_piece;
    if ((ev.flags & wire::kEventIncomplete) != 0) {
      ++r.incomplete;
    } else {
      ++r.built;
    }
    if ((ev.flags & wire::kEventCorrupted) != 0) ++r.corrupted;
    r.bytes += ev.size;
    batch.events.push_back(ev);
  }
  // The fragments are checked for the whole block at once, so that their cache misses overlap.
  if (!jobs_.empty()) check_pieces(batch, r);

  for (Part& p : s.parts) {
    if (!p.present) continue;
    for (std::uint8_t i = 0; i < p.message.segment_count; ++i) {
      batch.buffers.push_back(std::move(p.message.segments[i].buffer));
    }
    p.message.clear();
    p.present = false;
  }
  s.used = false;
  --open_;
  remember(s.id, r.generation);
  return r;
}

void BlockBuilder::remember(std::uint64_t id, std::uint32_t generation) {
  recent_[recent_next_] = Recent{id, generation};
  recent_next_ = (recent_next_ + 1) % recent_.size();
  recent_count_ = std::min(recent_count_ + 1, recent_.size());
}

std::uint32_t BlockBuilder::drop_open() {
  std::uint32_t dropped = 0;
  for (Slot& s : slots_) {
    if (!s.used) continue;
    std::uint32_t generation = 0;
    for (Part& p : s.parts) {
      if (p.present) generation = std::max(generation, p.generation);
      p.message.clear();
      p.present = false;
    }
    remember(s.id, generation);
    s.used = false;
    ++dropped;
  }
  open_ = 0;
  return dropped;
}

void BlockBuilder::clear() {
  for (Slot& s : slots_) {
    for (Part& p : s.parts) {
      p.message.clear();
      p.present = false;
    }
    s.used = false;
  }
  open_ = 0;
}

}  // namespace daqflow::apps::evb
