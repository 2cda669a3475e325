#pragma once
// Checks of one built event's data, shared by the event file and FRD file checkers.

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

}  // namespace daqflow::apps::output
