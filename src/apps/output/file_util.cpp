#include "file_util.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <vector>

#include "daqflow/wire/crc32c.hpp"

namespace daqflow::apps::output {

bool write_small_file(const std::string& path, std::string_view data, std::string& error) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    error = fmt::format("creating {}: {}", path, std::strerror(errno));
    return false;
  }
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      error = fmt::format("writing {}: {}", path, std::strerror(errno));
      ::close(fd);
      return false;
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    error = fmt::format("closing {}: {}", path, std::strerror(errno));
    return false;
  }
  return true;
}

bool file_crc32c(const std::string& path, std::uint32_t& crc, std::string& error) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = fmt::format("reading {}: {}", path, std::strerror(errno));
    return false;
  }
  std::vector<std::byte> chunk(std::size_t{1} << 20);
  crc = 0;
  for (;;) {
    const ssize_t n = ::read(fd, chunk.data(), chunk.size());
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      error = fmt::format("reading {}: {}", path, std::strerror(errno));
      ::close(fd);
      return false;
    }
    crc = wire::crc32c(std::span(chunk.data(), static_cast<std::size_t>(n)), crc);
  }
  ::close(fd);
  return true;
}

void sync_directory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

int writev_all(int fd, iovec* iov, std::size_t count) {
  std::size_t first = 0;
  while (first < count) {
    const ssize_t n = ::writev(fd, iov + first, static_cast<int>(count - first));
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    // A short write leaves the rest for the next writev(): skip what went out.
    auto left = static_cast<std::size_t>(n);
    while (first < count && left >= iov[first].iov_len) left -= iov[first++].iov_len;
    if (left > 0) {
      iov[first].iov_base = static_cast<std::byte*>(iov[first].iov_base) + left;
      iov[first].iov_len -= left;
    }
  }
  return 0;
}

bool write_file_then_rename(const std::string& path, std::string_view data, std::string& error) {
  const std::string tmp = path + ".tmp";
  if (!write_small_file(tmp, data, error)) return false;
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    error = fmt::format("renaming {}: {}", tmp, std::strerror(errno));
    return false;
  }
  return true;
}

std::string taken_name(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return {};
  return path + " exists already; refusing to overwrite it (remove it or change run.number)";
}

}  // namespace daqflow::apps::output
