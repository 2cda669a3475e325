#include "daqflow/core/memory.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

namespace daqflow::core {
namespace {

#ifndef MADV_POPULATE_WRITE
constexpr int MADV_POPULATE_WRITE = 23;  // Linux 5.14
#endif

std::atomic<bool> g_pool_prefault{true};

std::size_t page_size() {
  return static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}

}  // namespace

bool prefault(std::span<std::byte> memory) {
  if (memory.empty()) return true;
  if (::madvise(memory.data(), memory.size(), MADV_POPULATE_WRITE) == 0) return true;
  if (errno != EINVAL) return false;  // ENOMEM, EFAULT...: the pages are not there
  // Kernels before 5.14: a write to each page. The memory is new, so the zeros stay zeros.
  const std::size_t page = page_size();
  for (std::size_t at = 0; at < memory.size(); at += page) {
    volatile auto* p = reinterpret_cast<volatile char*>(memory.data() + at);
    *p = *p;
  }
  return true;
}

Result<std::span<std::byte>> map_pool_memory(std::size_t bytes, std::string_view what) {
  const std::size_t page = page_size();
  const std::size_t size = (bytes == 0 ? page : (bytes + page - 1) / page * page);
  void* base = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) {
    return Error(code_of_errno(errno), std::string(what) + ": cannot map " + std::to_string(size) +
                                           " bytes: " + std::strerror(errno));
  }
  const std::span<std::byte> memory{static_cast<std::byte*>(base), size};
  // Large regions benefit from huge pages (fewer TLB misses, fewer pages for a NIC or the kernel
  // to pin); the advice is taken before the pages are faulted in, and its failure is harmless.
  if (size >= (std::size_t{2} << 20)) ::madvise(base, size, MADV_HUGEPAGE);
  if (g_pool_prefault.load(std::memory_order_relaxed) && !prefault(memory)) {
    const int error = errno;
    ::munmap(base, size);
    return Error(code_of_errno(error), std::string(what) + ": cannot fault in " +
                                           std::to_string(size) +
                                           " bytes: " + std::strerror(error));
  }
  return memory;
}

void set_pool_prefault(bool on) {
  g_pool_prefault.store(on, std::memory_order_relaxed);
}

void unmap_pool_memory(std::span<std::byte> memory) {
  if (!memory.empty()) ::munmap(memory.data(), memory.size());
}

}  // namespace daqflow::core
