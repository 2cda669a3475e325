#pragma once
// The shm transport's segments in /dev/shm, as `daqflow shm` lists and removes them: a process
// that crashed leaves its segments behind.

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <vector>

#include "daqflow/core/result.hpp"

namespace daqflow::transport::shm {

// One segment found in /dev/shm.
struct SegmentInfo {
  std::string name;
  std::size_t bytes = 0;
  bool readable = false;  // a daqflow header could be read
  std::string kind;       // "endpoint", "pool", or "?"
  std::string run_tag;
  std::string context;
  std::string application;
  pid_t pid = 0;
  bool owner_alive = false;
  std::string state;  // open, closed, aborted, creating
};

// The bytes of one shm endpoint's segment in a cluster of `applications` applications (its
// channels, one per peer); the send pools come on top.
[[nodiscard]] std::size_t endpoint_segment_bytes(std::size_t applications);

// Every daqflow segment in /dev/shm, sorted by name.
[[nodiscard]] std::vector<SegmentInfo> list_segments();
// Removes a segment by name; returns an error saying why not.
Result<void> remove_segment(const std::string& name);

}  // namespace daqflow::transport::shm
