#pragma once
// Small file helpers of the event writers (control path and the writers' threads).

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace daqflow::apps::output {

// Writes all of data to a new file at path (replacing one left by a crash) and fsyncs it; on
// failure error says what and where.
[[nodiscard]] bool write_small_file(const std::string& path, std::string_view data,
                                    std::string& error);
// write_small_file() under path + ".tmp", then renamed to path: a reader that picks files up by
// name never sees half of one.
[[nodiscard]] bool write_file_then_rename(const std::string& path, std::string_view data,
                                          std::string& error);
// Writes every byte of iov[0, count) with as few writev() calls as the kernel allows, going on
// after short writes and EINTR (iov is consumed). 0, or the errno of the write that failed.
[[nodiscard]] int writev_all(int fd, iovec* iov, std::size_t count);
// The CRC-32C of every byte of the file at path (read back: for files another library wrote);
// false with error set when it cannot be read.
[[nodiscard]] bool file_crc32c(const std::string& path, std::uint32_t& crc, std::string& error);
// fsync of a directory, so that a rename or a new file in it is on disk (errors ignored).
void sync_directory(const std::string& dir);
// Why a writer must not take `path` for its next file ("" when it may): a file of that name
// exists (an earlier attempt's: overwriting it would lose its events).
[[nodiscard]] std::string taken_name(const std::string& path);

}  // namespace daqflow::apps::output
