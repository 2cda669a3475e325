// Fuzzes the event-file reader that `daqflow dump` and the salvage of a lost BU's files rely on:
// the header and record decoders, and the whole-file checker on the input as a file. Whatever
// the bytes: a status or a report, never undefined behaviour; a header or record that decodes
// encodes back to the same bytes.
#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "daqflow/apps/output/event_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace daqflow::apps::output;
  const std::span<const std::byte> in(reinterpret_cast<const std::byte*>(data), size);
  RecordHeader record;
  if (decode_record_header(in, record) == FileFormatStatus::ok) {
    std::array<std::byte, kRecordHeaderSize> out{};
    encode_record_header(record, out);
    if (std::memcmp(out.data(), data, out.size()) != 0) __builtin_trap();
  }
  FileHeader header;
  std::size_t header_size = 0;
  (void)decode_file_header(in, header, header_size);

  const int fd = ::memfd_create("fuzz-event-file", MFD_CLOEXEC);
  if (fd < 0) return 0;
  if (::write(fd, data, size) == static_cast<ssize_t>(size)) {
    const FileReport report = check_event_file("/proc/self/fd/" + std::to_string(fd));
    if (report.complete) __builtin_trap();  // no sidecar beside a memfd
  }
  ::close(fd);
  return 0;
}
