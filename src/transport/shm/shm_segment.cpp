#include "shm_segment.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "daqflow/core/memory.hpp"

namespace daqflow::transport::shm {
namespace {

void append_clean(std::string& out, std::string_view part) {
  for (const char c : part) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '_' || c == '-' || c == '.';
    out += plain ? c : '_';
  }
}

std::string errno_text(int error) {
  return std::strerror(error);
}

// Field 22 of /proc/PID/stat: the start time in clock ticks after boot; 0 if unreadable.
std::uint64_t start_time_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(in, text)) return 0;
  // The command name (field 2) may hold spaces and parentheses: fields resume after the last ')'.
  const auto close = text.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(text.substr(close + 2));
  std::string field;
  for (int i = 3; i <= 22; ++i) {
    if (!(fields >> field)) return 0;
  }
  return std::strtoull(field.c_str(), nullptr, 10);
}

void copy_name(char (&out)[kNameField], std::string_view in) {
  const std::size_t n = std::min(in.size(), kNameField - 1);
  std::memcpy(out, in.data(), n);
  out[n] = '\0';
}

std::string field_text(const char (&in)[kNameField]) {
  return std::string(in, strnlen(in, kNameField));
}

std::string_view state_text(SegmentState s) {
  switch (s) {
    case SegmentState::creating:
      return "creating";
    case SegmentState::open:
      return "open";
    case SegmentState::closed:
      return "closed";
    case SegmentState::aborted:
      return "aborted";
  }
  return "?";
}

// Reads a segment's header without trusting it: nullopt-like false when it is not ours.
bool read_header(const std::string& name, SegmentHeader& out, std::size_t& bytes) {
  const int fd = shm_open(("/" + name).c_str(), O_RDONLY, 0);
  if (fd < 0) return false;
  struct stat st {};
  bool ok = fstat(fd, &st) == 0;
  bytes = ok ? static_cast<std::size_t>(st.st_size) : 0;
  ok = ok && bytes >= kHeaderBytes;
  if (ok) {
    void* mem = mmap(nullptr, kHeaderBytes, PROT_READ, MAP_SHARED, fd, 0);
    ok = mem != MAP_FAILED;
    if (ok) {
      std::memcpy(static_cast<void*>(&out), mem, sizeof(SegmentHeader));
      munmap(mem, kHeaderBytes);
      ok = out.magic == kMagic && out.version == kVersion;
    }
  }
  ::close(fd);
  return ok;
}

}  // namespace

std::string segment_name(std::string_view run_tag, std::string_view context,
                         std::string_view application, std::string_view what) {
  std::string name(kPrefix);
  append_clean(name, run_tag);
  name += '.';
  append_clean(name, context);
  name += '.';
  append_clean(name, application);
  name += '.';
  append_clean(name, what);
  return name;
}

ProcessId self_process() {
  // Recomputed after a fork: the child is another process.
  thread_local ProcessId self{};
  if (self.pid != ::getpid()) self = ProcessId{::getpid(), start_time_of(::getpid())};
  return self;
}

bool process_alive(pid_t pid, std::uint64_t start_time) {
  if (pid <= 0) return false;
  if (::kill(pid, 0) != 0 && errno == ESRCH) return false;
  const std::uint64_t now = start_time_of(pid);
  // Unreadable /proc (another user's process): trust kill().
  return now == 0 || start_time == 0 || now == start_time;
}

Result<std::shared_ptr<Mapping>> Mapping::create(const std::string& name, std::size_t bytes) {
  const std::string path = "/" + name;
  int fd = shm_open(path.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0 && errno == EEXIST) {
    SegmentHeader h{};
    std::size_t old_bytes = 0;
    if (read_header(name, h, old_bytes) && process_alive(h.pid, h.start_time) &&
        h.state.load() != SegmentState::closed) {
      return Error(ErrorCode::conflict, "shared-memory segment /dev/shm/" + name +
                                            " is in use by process " + std::to_string(h.pid));
    }
    // A leftover of a process that died (or never finished writing its header): ours now.
    shm_unlink(path.c_str());
    fd = shm_open(path.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  }
  if (fd < 0) {
    return Error(code_of_errno(errno),
                 "cannot create shared-memory segment /dev/shm/" + name + ": " + errno_text(errno));
  }
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    const int error = errno;
    ::close(fd);
    shm_unlink(path.c_str());
    return Error(code_of_errno(error), "cannot size shared-memory segment /dev/shm/" + name +
                                           " to " + std::to_string(bytes) +
                                           " bytes: " + errno_text(error));
  }
  // The pages are taken now: a full /dev/shm is an error here, not a SIGBUS in the middle of a
  // run when a message first lands on a page that tmpfs cannot give.
  if (const int error = posix_fallocate(fd, 0, static_cast<off_t>(bytes)); error != 0) {
    ::close(fd);
    shm_unlink(path.c_str());
    return Error(code_of_errno(error), "cannot reserve " + std::to_string(bytes) +
                                           " bytes for shared-memory segment " + "/dev/shm/" +
                                           name + ": " + errno_text(error));
  }
  void* mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int error = errno;
  ::close(fd);
  if (mem == MAP_FAILED) {
    shm_unlink(path.c_str());
    return Error(code_of_errno(error),
                 "cannot map shared-memory segment /dev/shm/" + name + ": " + errno_text(error));
  }
  core::prefault({static_cast<std::byte*>(mem), bytes});
  return std::make_shared<Mapping>(name, static_cast<std::byte*>(mem), bytes);
}

Result<std::shared_ptr<Mapping>> Mapping::open(const std::string& name, SegmentKind kind) {
  const std::string path = "/" + name;
  const int fd = shm_open(path.c_str(), O_RDWR, 0);
  if (fd < 0) {
    return Error(code_of_errno(errno),
                 "cannot open shared-memory segment /dev/shm/" + name + ": " + errno_text(errno));
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || static_cast<std::size_t>(st.st_size) < kHeaderBytes) {
    ::close(fd);
    return Error(ErrorCode::unavailable,
                 "shared-memory segment /dev/shm/" + name + " is not ready");
  }
  const auto bytes = static_cast<std::size_t>(st.st_size);
  void* mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int error = errno;
  ::close(fd);
  if (mem == MAP_FAILED) {
    return Error(code_of_errno(error),
                 "cannot map shared-memory segment /dev/shm/" + name + ": " + errno_text(error));
  }
  core::prefault({static_cast<std::byte*>(mem), bytes});  // page tables now, not during the run
  auto mapping = std::make_shared<Mapping>(name, static_cast<std::byte*>(mem), bytes);
  const SegmentHeader& h = mapping->header();
  if (h.magic != kMagic || h.version != kVersion || h.kind != kind || h.bytes != bytes ||
      h.data_offset > bytes) {
    return Error(ErrorCode::conflict, "shared-memory segment /dev/shm/" + name +
                                          " is not a daqflow segment of this version");
  }
  if (h.state.load(std::memory_order_acquire) == SegmentState::creating) {
    return Error(ErrorCode::unavailable,
                 "shared-memory segment /dev/shm/" + name + " is not ready");
  }
  return mapping;
}

Mapping::~Mapping() {
  munmap(base_, bytes_);
}

void Mapping::unlink() {
  if (unlinked_) return;
  unlinked_ = true;
  shm_unlink(("/" + name_).c_str());
}

void init_header(SegmentHeader& h, SegmentKind kind, std::size_t bytes, std::string_view run_tag,
                 std::string_view context, std::string_view application) {
  const ProcessId self = self_process();
  h.magic = kMagic;
  h.version = kVersion;
  h.kind = kind;
  h.pid = self.pid;
  h.start_time = self.start_time;
  h.bytes = bytes;
  copy_name(h.run_tag, run_tag);
  copy_name(h.context, context);
  copy_name(h.application, application);
  h.state.store(SegmentState::creating, std::memory_order_relaxed);
}

std::vector<SegmentInfo> list_segments() {
  std::vector<SegmentInfo> out;
  DIR* dir = opendir("/dev/shm");
  if (dir == nullptr) return out;
  while (const dirent* entry = readdir(dir)) {
    const std::string name = entry->d_name;
    if (name.compare(0, kPrefix.size(), kPrefix) != 0) continue;
    SegmentInfo info;
    info.name = name;
    SegmentHeader h{};
    info.readable = read_header(name, h, info.bytes);
    info.kind = "?";
    if (info.readable) {
      info.kind = h.kind == SegmentKind::endpoint ? "endpoint"
                  : h.kind == SegmentKind::pool   ? "pool"
                                                  : "?";
      info.run_tag = field_text(h.run_tag);
      info.context = field_text(h.context);
      info.application = field_text(h.application);
      info.pid = h.pid;
      info.owner_alive = process_alive(h.pid, h.start_time);
      info.state = std::string(state_text(h.state.load()));
    }
    out.push_back(std::move(info));
  }
  closedir(dir);
  std::sort(out.begin(), out.end(),
            [](const SegmentInfo& a, const SegmentInfo& b) { return a.name < b.name; });
  return out;
}

Result<void> remove_segment(const std::string& name) {
  if (shm_unlink(("/" + name).c_str()) != 0) {
    return Error(code_of_errno(errno), "cannot remove /dev/shm/" + name + ": " + errno_text(errno));
  }
  return ok();
}

}  // namespace daqflow::transport::shm
