#pragma once
// Shared-memory segments of the shm transport: naming, creating, mapping and removing them, and
// telling whether the process that made one is still alive. Control path only.

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "daqflow/core/result.hpp"
#include "daqflow/transport/shm.hpp"
#include "shm_layout.hpp"

namespace daqflow::transport::shm {

inline constexpr std::string_view kPrefix = "daqflow.";

// "daqflow.<run tag>.<context>.<application>.<what>" with every character outside [A-Za-z0-9_-.]
// of the parts replaced by '_' (no '/', which shm_open refuses).
[[nodiscard]] std::string segment_name(std::string_view run_tag, std::string_view context,
                                       std::string_view application, std::string_view what);

// This process as SegmentHeader records it.
struct ProcessId {
  pid_t pid = 0;
  std::uint64_t start_time = 0;
};
[[nodiscard]] ProcessId self_process();
// Whether the process is alive and is the one that was started at start_time (a pid reused by a
// newer process counts as dead).
[[nodiscard]] bool process_alive(pid_t pid, std::uint64_t start_time);

// A mapped segment; unmapped when destroyed. The name is removed only by unlink().
class Mapping {
 public:
  // Creates the segment (bytes, header included) exclusively. A leftover of the same name whose
  // owner is dead is removed first; one whose owner lives is an error naming that process.
  static Result<std::shared_ptr<Mapping>> create(const std::string& name, std::size_t bytes);
  // Maps an existing segment after checking its header (magic, version, kind, size).
  static Result<std::shared_ptr<Mapping>> open(const std::string& name, SegmentKind kind);
  Mapping(std::string name, std::byte* base, std::size_t bytes)
      : name_(std::move(name)), base_(base), bytes_(bytes) {}
  ~Mapping();
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;

  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] std::byte* base() const { return base_; }
  [[nodiscard]] std::size_t bytes() const { return bytes_; }
  [[nodiscard]] SegmentHeader& header() const { return *reinterpret_cast<SegmentHeader*>(base_); }
  // Removes the name (the memory stays until every mapping is gone); once only.
  void unlink();

 private:
  std::string name_;
  std::byte* base_;
  std::size_t bytes_;
  bool unlinked_ = false;
};

// Fills a new segment's header: identity, names, state creating. The creator publishes it with
// state open once the rest of the segment is ready.
void init_header(SegmentHeader& h, SegmentKind kind, std::size_t bytes, std::string_view run_tag,
                 std::string_view context, std::string_view application);

}  // namespace daqflow::transport::shm
