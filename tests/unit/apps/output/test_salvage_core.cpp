// The salvage core every file format shares (apps/output/salvage_core.hpp), on files described in
// memory and a finish that records what it is asked: blocks decided from what is on disk,
// partial blocks and events built again cut, files that cannot be finished, ambiguous keys.

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "apps/output/salvage_core.hpp"

namespace daqflow::apps::output {
namespace {

// A file of records with keys first.. (each 100 bytes, after a 10-byte header).
SalvageFile file(std::vector<std::uint64_t> keys, bool finished) {
  SalvageFile f;
  std::uint64_t at = 10;
  for (const std::uint64_t k : keys) {
    f.records.push_back({k, at, at + 100});
    at += 100;
  }
  f.size = f.end = at;
  f.finished = f.in_output = finished;
  return f;
}

SalvageBlock block(std::uint64_t id, std::uint64_t first, std::uint32_t events) {
  SalvageBlock b;
  b.block_id = id;
  b.first_event = first;
  b.events = events;
  return b;
}

struct Salvage {
  std::vector<std::size_t> finished;  // files finish() was called on
  std::vector<std::size_t> failing;   // files whose finish fails
  SalvageReport report;

  void settle_files(std::vector<SalvageFile>& files, const std::vector<SalvageBlock>& doubt,
                    const std::vector<std::uint64_t>& again = {}) {
    report = settle(
        files, doubt, [](const SalvageBlock& b, std::uint64_t i) { return b.first_event + i; },
        again,
        [&](std::size_t f) -> Result<std::string> {
          finished.push_back(f);
          for (const std::size_t x : failing) {
            if (x == f) return Error("disk says no");
          }
          return files[f].kept() == 0 ? std::string() : "file" + std::to_string(f);
        });
  }
};

TEST(SalvageCore, DecidesBlocksFromWhatIsOnDiskAndCutsAPartialOne) {
  // A finished file with events 0-3, the file being written with 4-6: block 2 (events 6-8) was
  // being written when the writer died.
  std::vector<SalvageFile> files = {file({0, 1, 2, 3}, true), file({4, 5, 6}, false)};
  Salvage run;
  run.settle_files(files, {block(1, 2, 4), block(2, 6, 3), block(3, 9, 2)});
  EXPECT_EQ(run.report.written, (std::vector<std::uint64_t>{1}));
  EXPECT_EQ(run.report.not_written, (std::vector<std::uint64_t>{2, 3}));
  EXPECT_TRUE(run.report.undecided.empty());
  EXPECT_EQ(run.finished, (std::vector<std::size_t>{1})) << "the finished file is left alone";
  EXPECT_EQ(files[1].end, 210U) << "cut before event 6";
  EXPECT_EQ(files[1].kept(), 2U);
  EXPECT_EQ(run.report.bytes_cut, 100U);
  EXPECT_EQ(run.report.events_kept, 2U);
  EXPECT_EQ(run.report.files, (std::vector<std::string>{"file1"}));
}

TEST(SalvageCore, EventsBuiltAgainElsewhereAreCutWithWhatFollows) {
  std::vector<SalvageFile> files = {file({0, 1, 2, 3}, false)};
  Salvage run;
  run.settle_files(files, {}, {2});
  EXPECT_EQ(files[0].kept(), 2U);
  EXPECT_EQ(run.report.bytes_cut, 200U);
}

TEST(SalvageCore, AFileCutToNothingIsRemoved) {
  std::vector<SalvageFile> files = {file({5, 6}, false)};
  Salvage run;
  run.settle_files(files, {block(1, 5, 3)});  // events 5-7: partial
  EXPECT_EQ(files[0].kept(), 0U);
  EXPECT_TRUE(run.report.files.empty());
  EXPECT_EQ(run.report.not_written, (std::vector<std::uint64_t>{1}));
}

TEST(SalvageCore, AnUnfinishableFileDecidesByWhetherItIsOutput) {
  // Not output (a part file): its blocks are built again, its earlier events lost.
  {
    std::vector<SalvageFile> files = {file({0, 1, 2}, false)};
    Salvage run;
    run.failing = {0};
    run.settle_files(files, {block(1, 2, 1)});
    EXPECT_EQ(run.report.not_written, (std::vector<std::uint64_t>{1}));
    EXPECT_EQ(run.report.events_lost, 2U) << "events 0 and 1 were acknowledged before";
    ASSERT_EQ(run.report.unfinished.size(), 1U);
    EXPECT_NE(run.report.unfinished[0].find("disk says no"), std::string::npos);
  }
  // Output as it is (a finished file that needed a cut): its blocks stay in doubt.
  {
    std::vector<SalvageFile> files = {file({0, 1, 2, 3}, true)};
    Salvage run;
    run.failing = {0};
    run.settle_files(files, {block(1, 0, 2), block(2, 3, 2)});
    EXPECT_EQ(run.report.undecided, (std::vector<std::uint64_t>{1, 2}));
    EXPECT_EQ(run.report.events_lost, 0U);
  }
}

TEST(SalvageCore, AKeyFoundTwiceLeavesItsBlockInDoubt) {
  std::vector<SalvageFile> files = {file({7, 8}, true), file({8, 9}, false)};
  Salvage run;
  run.settle_files(files, {block(1, 8, 1), block(2, 9, 1)});
  EXPECT_EQ(run.report.undecided, (std::vector<std::uint64_t>{1}));
  EXPECT_EQ(run.report.written, (std::vector<std::uint64_t>{2}));
}

}  // namespace
}  // namespace daqflow::apps::output
