#include "salvage_core.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

namespace daqflow::apps::output {

std::size_t SalvageFile::kept() const {
  std::size_t n = 0;
  while (n < records.size() && records[n].end <= end) ++n;
  return n;
}

SalvageReport settle(std::vector<SalvageFile>& files, const std::vector<SalvageBlock>& in_doubt,
                     const std::function<std::uint64_t(const SalvageBlock&, std::uint64_t)>& key,
                     const std::vector<std::uint64_t>& sent_again,
                     const std::function<Result<std::string>(std::size_t)>& finish) {
  // Where each record lies: key -> file, offset.
  std::map<std::uint64_t, std::pair<std::size_t, std::uint64_t>> where;
  std::set<std::uint64_t> ambiguous;
  for (std::size_t f = 0; f < files.size(); ++f) {
    for (const SalvageRecord& r : files[f].records) {
      if (!where.try_emplace(r.key, f, r.offset).second) ambiguous.insert(r.key);
    }
  }
  const auto is_ambiguous = [&](const SalvageBlock& b) {
    for (std::uint64_t i = 0; i < b.events; ++i) {
      if (ambiguous.contains(key(b, i))) return true;
    }
    return false;
  };
  const auto cut_before = [&](std::uint64_t k) {
    const auto it = where.find(k);
    if (it == where.end()) return;
    SalvageFile& s = files[it->second.first];
    s.end = std::min(s.end, it->second.second);
  };
  // A block with some of its events on disk is cut out (before its first event in each file).
  for (const SalvageBlock& b : in_doubt) {
    if (is_ambiguous(b)) continue;
    std::uint32_t present = 0;
    for (std::uint64_t i = 0; i < b.events; ++i) present += where.contains(key(b, i)) ? 1 : 0;
    if (present == 0 || present == b.events) continue;
    for (std::uint64_t i = 0; i < b.events; ++i) cut_before(key(b, i));
  }
  for (const std::uint64_t k : sent_again) cut_before(k);

  // Finish what needs it, then decide each block from what is output.
  enum class Outcome : std::uint8_t { output, not_output, unknown };
  std::vector<Outcome> outcome(files.size(), Outcome::output);
  SalvageReport report;
  for (std::size_t f = 0; f < files.size(); ++f) {
    const SalvageFile& s = files[f];
    if (s.finished && s.end == s.size) continue;  // untouched
    auto done = finish(f);
    if (!done) {
      report.unfinished.push_back(done.error().message());
      outcome[f] = s.in_output ? Outcome::unknown : Outcome::not_output;
      continue;
    }
    if (s.size > s.end) report.bytes_cut += s.size - s.end;
    if (done->empty()) continue;
    report.files.push_back(*done);
    report.events_kept += s.kept();
  }
  // The events of an unfinished file that could not be finished, acknowledged earlier (not of a
  // block in doubt): lost from the output.
  std::set<std::uint64_t> doubtful;
  for (const SalvageBlock& b : in_doubt) {
    for (std::uint64_t i = 0; i < b.events; ++i) doubtful.insert(key(b, i));
  }
  for (std::size_t f = 0; f < files.size(); ++f) {
    if (outcome[f] != Outcome::not_output) continue;
    for (const SalvageRecord& r : files[f].records) {
      report.events_lost += doubtful.contains(r.key) ? 0 : 1;
    }
  }
  for (const SalvageBlock& b : in_doubt) {
    std::uint32_t out = 0;
    bool unknown = is_ambiguous(b);
    for (std::uint64_t i = 0; i < b.events; ++i) {
      const auto it = where.find(key(b, i));
      if (it == where.end()) continue;
      const auto [f, offset] = it->second;
      unknown = unknown || outcome[f] == Outcome::unknown;
      out += outcome[f] == Outcome::output && offset < files[f].end ? 1 : 0;
    }
    if (unknown || (out != 0 && out != b.events)) {
      report.undecided.push_back(b.block_id);
    } else {
      (out == b.events && b.events > 0 ? report.written : report.not_written).push_back(b.block_id);
    }
  }
  return report;
}

}  // namespace daqflow::apps::output
