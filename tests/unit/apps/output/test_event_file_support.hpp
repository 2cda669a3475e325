#pragma once
// Helpers for the event-file, file-output and network-input tests: real FED fragments made with
// the FED codec, and temporary directories that clean up after themselves.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "daqflow/apps/output/output.hpp"
#include "daqflow/wire/crc32c.hpp"
#include "daqflow/wire/fed.hpp"

namespace daqflow::apps::output::testing {

// A complete fragment of `size` bytes (a multiple of 8, >= 16) from FED `fed` for `event`.
inline std::vector<std::byte> make_fragment(std::uint16_t fed, std::uint64_t event,
                                            std::size_t size, std::uint64_t seed = 7) {
  std::vector<std::byte> bytes(size);
  wire::FedHeaderFields header;
  header.l1_id = wire::fed_l1_id(event);
  header.source_id = fed;
  header.bx_id = static_cast<std::uint16_t>(event % 3564);
  EXPECT_EQ(wire::write_fragment(bytes, header, seed), wire::FedStatus::ok);
  return bytes;
}

// Fragments of FEDs first..first+count-1 for one event, concatenated (a super-fragment).
inline std::vector<std::byte> make_super_fragment(std::uint16_t first, std::size_t count,
                                                  std::uint64_t event, std::size_t size) {
  std::vector<std::byte> out;
  for (std::size_t i = 0; i < count; ++i) {
    auto f = make_fragment(static_cast<std::uint16_t>(first + i), event, size);
    out.insert(out.end(), f.begin(), f.end());
  }
  return out;
}

inline std::vector<std::byte> read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> bytes(chars.size());
  std::memcpy(bytes.data(), chars.data(), chars.size());
  return bytes;
}

// The files an output says it finished are the files in `paths`, each as it is on disk: its size
// and the CRC-32C of its bytes; `events` in all.
inline void expect_files_as_on_disk(const std::vector<WrittenFile>& files,
                                    const std::vector<std::filesystem::path>& paths,
                                    std::uint64_t events) {
  ASSERT_EQ(files.size(), paths.size());
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < files.size(); ++i) {
    SCOPED_TRACE(paths[i].string());
    EXPECT_EQ(files[i].path, std::filesystem::absolute(paths[i]).lexically_normal().string());
    EXPECT_EQ(files[i].bytes, std::filesystem::file_size(paths[i]));
    EXPECT_EQ(files[i].checksum, fmt::format("crc32c:{:08x}", wire::crc32c(read_file(paths[i]))));
    total += files[i].events;
  }
  EXPECT_EQ(total, events);
}

class TempDir {
 public:
  TempDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "daqflow-evbio-XXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace daqflow::apps::output::testing
