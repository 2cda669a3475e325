#pragma once
// What the salvage of every file format shares (salvage.hpp): from the records found in a lost
// writer's files, decide its blocks in doubt, cut what must be built again, finish each file as
// its writer would have, and count what the output then holds. The formats say only how their
// files are found, scanned, keyed and finished (salvage.cpp: event files; frd_salvage.cpp: CMS
// FRD files). Control path only.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "daqflow/apps/output/salvage.hpp"
#include "daqflow/core/result.hpp"

namespace daqflow::apps::output {

// A record that checks (header and CRC), under the key the blocks name it by.
struct SalvageRecord {
  std::uint64_t key = 0;
  std::uint64_t offset = 0;  // of its header: a cut before it truncates the file there
  std::uint64_t end = 0;     // past its data
};

// A file as scanned: its records in file order, up to the first torn or damaged one.
struct SalvageFile {
  std::vector<SalvageRecord> records;
  std::uint64_t size = 0;  // as found
  std::uint64_t end = 0;   // where the records kept end (cuts lower it)
  // Finished by its writer: left alone when nothing is cut from it.
  bool finished = false;
  // Where it cannot be finished: whether what it holds is in the output as it is (the blocks
  // that reach into it then stay in doubt) or not (they are built again, and the events it holds
  // that were acknowledged earlier are lost from the output).
  bool in_output = false;

  // The records left once the cuts are made.
  [[nodiscard]] std::size_t kept() const;
};

// key(block, i): the key of event i of a block in doubt. sent_again: keys others build again
// whatever the files hold (each file is cut before the first of them it holds). finish(f): makes
// files[f] output as its writer would have, cut at its end (the path, or "" when it was removed
// for holding no record). A key found in two places is ambiguous: a block with one stays in doubt.
// Fills every field of the report but events_on_disk.
[[nodiscard]] SalvageReport settle(
    std::vector<SalvageFile>& files, const std::vector<SalvageBlock>& in_doubt,
    const std::function<std::uint64_t(const SalvageBlock&, std::uint64_t)>& key,
    const std::vector<std::uint64_t>& sent_again,
    const std::function<Result<std::string>(std::size_t)>& finish);

}  // namespace daqflow::apps::output
