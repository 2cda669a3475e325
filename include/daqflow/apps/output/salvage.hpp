#pragma once
// Salvage of a lost BU's event files (docs/reliability.md, "A BU killed while writing"): the
// blocks the EVM granted to a BU that died before acknowledging them are in doubt; what the BU's
// files hold decides them. salvage_bu_files() reads the BU's unfinished NAME.dqf.part files of
// the run and its newest finished file (or, with output kind hdf5, its NAME.h5.part files and
// newest NAME.h5, read as of their last flush: hdf5_file.hpp), keeps each record whose header
// and CRC32C check, and:
//
//   - a block in doubt with every event on disk is written: it stays, and counts as built;
//   - a block with none of its events on disk is not written: the EVM has it built again;
//   - a block with some of its events on disk (the BU died while writing it) is cut out: the
//     file is truncated before its first event there, and it is built again;
//   - a record torn by the death is cut too.
//
// Each file is then finished as the BU would have: NAME.dqf.part renamed to NAME.dqf with its
// sidecar (checksum, counts and first and last event recomputed), or a finished file truncated
// and given a new sidecar; a file left without records is removed. So no event is on disk twice
// and none that the EVM counts as built is missing.
//
// The BU writes a block's events one after the other and the blocks in the order the EVM granted
// them, so a partial block is the last thing written and nothing after it is lost by the cut.
//
// On a failing disk (writes end with EIO while reads still work) a file may not be finishable.
// Only a file with its sidecar is output (`daqflow dump` counts no other), so the blocks are
// decided from what is output once the files have been tried: a NAME.dqf.part that could not be
// finished holds nothing of the output, and its blocks are built again; a finished file that
// needed a cut and could not be rewritten leaves the blocks that reach into it in doubt (the
// EVM keeps them, and the run's results count them as in doubt). The events of an unfinished file
// that the BU had acknowledged before are lost from the output and counted (events_lost); the
// file also holds events built again elsewhere, so it must never be finished as it is.
// Control path only (the controller runs it once the BU's process is gone).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "daqflow/core/result.hpp"

namespace daqflow::apps::output {

struct SalvageBlock {
  std::uint64_t block_id = 0;
  std::uint64_t first_event = 0;  // the id of its first event, as the BU's records hold it
  std::uint32_t events = 0;
  std::uint32_t lumi = 0;  // its luminosity section (FRD files: where its events are)
};

struct SalvageReport {
  std::vector<std::uint64_t> written;      // block ids
  std::vector<std::uint64_t> not_written;  // block ids (partial ones included)
  std::vector<std::uint64_t> undecided;    // block ids left in doubt (see above)
  std::vector<std::string> files;          // finished or rewritten by the salvage
  std::vector<std::string> unfinished;     // why each file that could not be finished was not
  std::uint64_t events_lost = 0;  // acknowledged earlier, but in a file that could not be finished
  std::uint64_t events_kept = 0;  // records in those files after the cuts
  // Every event in the BU's finished files of the run once the salvage is done (their
  // sidecars'): what it wrote, as the output holds it.
  std::uint64_t events_on_disk = 0;
  std::uint64_t bytes_cut = 0;  // torn or partial data removed
};

// The same for a lost BU's CMS FRD files (output kind frd, apps/output/frd.hpp), in its run
// directory: the raw files of the sections of the blocks in doubt, the one still in open/ and
// any finished one without its .jsn are scanned (events kept while their FRD header and CRC-32C
// check); an event of a block is found by its section and event number (the id's low 32 bits);
// a block one of whose numbers is found twice in its section (a resync repeated it) stays in
// doubt, as does one in a finished file that could not be rewritten. Blocks
// are decided and partial ones cut as above; each touched file is finished as the BU would have
// (truncated, its raw header rewritten, moved out of open/, its .jsn written), then, since the
// BU writes nothing more in this run, every section's EoLS and the run's EoR.
[[nodiscard]] Result<SalvageReport> salvage_frd_files(const std::string& run_dir,
                                                      std::uint32_t run_number,
                                                      std::string_view bu_id,
                                                      const std::vector<SalvageBlock>& in_doubt);

// sent_again: events that others build again whatever the files hold (a time-slice builder's
// timeslices its inputs sent to another builder once it was lost, round robin): each file is cut
// before the first of them it holds, as before a partial block. The writer acknowledges in the
// order it writes, so what follows such an event was not acknowledged either.
[[nodiscard]] Result<SalvageReport> salvage_bu_files(
    const std::string& dir, std::uint32_t run_number, std::string_view bu_id,
    const std::vector<SalvageBlock>& in_doubt, const std::vector<std::uint64_t>& sent_again = {});

}  // namespace daqflow::apps::output
