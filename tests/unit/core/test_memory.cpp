// Pool memory: mapped and faulted in at once, so that a run takes no page fault on its buffers
// and a host without the memory fails at Configure, naming the pool.

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <vector>

#include "daqflow/core/memory.hpp"

namespace daqflow::core {
namespace {

// How many pages of [base, base + bytes) are resident.
std::size_t resident_pages(std::span<std::byte> memory) {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> present((memory.size() + page - 1) / page);
  EXPECT_EQ(::mincore(memory.data(), memory.size(), present.data()), 0);
  std::size_t n = 0;
  for (unsigned char p : present) n += p & 1u;
  return n;
}

TEST(PoolMemory, EveryPageIsPresentBeforeTheFirstWrite) {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  auto memory = map_pool_memory(3 * 1024 * 1024 + 100, "pool 'test'");
  ASSERT_TRUE(memory) << memory.error().message();
  EXPECT_EQ(memory->size() % page, 0u) << "whole pages";
  EXPECT_GE(memory->size(), 3u * 1024 * 1024 + 100);
  EXPECT_EQ(resident_pages(*memory), memory->size() / page);
  for (std::size_t at = 0; at < memory->size(); at += page) {
    ASSERT_EQ((*memory)[at], std::byte{0}) << "new memory reads as zeros at " << at;
  }
  (*memory)[memory->size() - 1] = std::byte{0x5a};
  EXPECT_EQ((*memory)[memory->size() - 1], std::byte{0x5a});
  unmap_pool_memory(*memory);
}

TEST(PoolMemory, ZeroBytesIsOnePage) {
  auto memory = map_pool_memory(0, "pool 'empty'");
  ASSERT_TRUE(memory) << memory.error().message();
  EXPECT_EQ(memory->size(), static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)));
  unmap_pool_memory(*memory);
}

TEST(PoolMemory, MemoryTheHostCannotGiveIsAnErrorNamingThePool) {
  auto memory = map_pool_memory(std::size_t{1} << 62, "pool 'too big'");
  ASSERT_FALSE(memory);
  EXPECT_NE(memory.error().message().find("pool 'too big'"), std::string::npos)
      << memory.error().message();
}

TEST(PoolMemory, PrefaultPopulatesAMappingOfSomebodyElse) {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t bytes = 64 * page;
  void* base = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(base, MAP_FAILED);
  const std::span<std::byte> memory{static_cast<std::byte*>(base), bytes};
  EXPECT_EQ(resident_pages(memory), 0u) << "untouched anonymous memory";
  EXPECT_TRUE(prefault(memory));
  EXPECT_EQ(resident_pages(memory), 64u);
  EXPECT_TRUE(prefault({}));
  ::munmap(base, bytes);
}

}  // namespace
}  // namespace daqflow::core
