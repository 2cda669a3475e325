#pragma once
// Small file helpers of the event writers (control path and the writers' threads).

#include <string>
#include <string_view>

namespace daqflow::apps::evb {

// Writes all of data to a new file at path (replacing one left by a crash) and fsyncs it; on
// failure error says what and where.
[[nodiscard]] bool write_small_file(const std::string& path, std::string_view data,
                                    std::string& error);
// write_small_file() under path + ".tmp", then renamed to path: a reader that picks files up by
// name never sees half of one.
[[nodiscard]] bool write_file_then_rename(const std::string& path, std::string_view data,
                                          std::string& error);
// fsync of a directory, so that a rename or a new file in it is on disk (errors ignored).
void sync_directory(const std::string& dir);

}  // namespace daqflow::apps::evb
