#pragma once
// Checks of one record's data, shared by the event file, HDF5 file and FRD file checkers.

#include <cstddef>
#include <span>
#include <vector>

#include "daqflow/apps/output/event_file.hpp"
#include "daqflow/wire/fed.hpp"

namespace daqflow::apps::output {

// Walks an event's FED fragments from the back (structure, CRC-16, every L1 id equal to
// summary.record.event modulo 2^24); fills summary.feds, or summary.problem naming the FED.
void check_fragments(std::span<const std::byte> data, EventSummary& summary,
                     std::vector<wire::FedFragmentInfo>& infos);

// A record's data as its summary.content says: a built event's fragments, an SFC's decision
// and output, or a timeslice's descriptor and components; fills summary (its problem, if any).
void check_record_contents(std::span<const std::byte> data, EventSummary& summary,
                           std::vector<wire::FedFragmentInfo>& infos);

// A record whose CRC-32C does not match: its contents checked all the same, to name the source
// (FED or equipment) the damage is in where their own checks (CRC-16, CRC-32C) find it; leaves
// summary.problem empty when they find nothing.
void locate_damage(std::span<const std::byte> data, EventSummary& summary,
                   std::vector<wire::FedFragmentInfo>& infos);

}  // namespace daqflow::apps::output
