// Fuzzes what daqflow reads of CMS's formats: the FEROL block header of the FED network input,
// and the FRD files `daqflow dump` and the salvage of a lost BU's FRD files read (the FRD event
// and raw file headers, and the whole-file checker on the input as a raw file). Whatever the
// bytes: a status or a report, never undefined behaviour; a header that decodes encodes back to
// the same bytes.
#include <unistd.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

#include "daqflow/apps/output/frd.hpp"
#include "daqflow/wire/ferol.hpp"

namespace {

void require(bool condition) {
  if (!condition) __builtin_trap();
}

// A raw file's name must say its run, section and index: one such file per fuzzing process, in a
// directory removed when the process ends.
class RawFile {
 public:
  RawFile()
      : dir_(std::filesystem::temp_directory_path() /
             ("daqflow-fuzz-cms-" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "run000001_ls0001_index000000.raw").string();
  }
  ~RawFile() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  RawFile(const RawFile&) = delete;
  RawFile& operator=(const RawFile&) = delete;
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  std::filesystem::path dir_;
  std::string path_;
};

const std::string& raw_path() {
  static const RawFile file;
  return file.path();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace daqflow;
  const std::span<const std::byte> in(reinterpret_cast<const std::byte*>(data), size);

  wire::FerolHeader ferol;
  if (wire::decode_ferol_header(in, ferol) == wire::FerolStatus::ok) {
    // Reserved bits are ignored on decode, so the fields (not the bytes) must survive.
    std::array<std::byte, wire::kFerolHeaderSize> out{};
    require(wire::encode_ferol_header(ferol, out) == wire::FerolStatus::ok);
    wire::FerolHeader again;
    require(wire::decode_ferol_header(out, again) == wire::FerolStatus::ok && again == ferol);
  }
  apps::output::FrdHeader frd;
  if (apps::output::decode_frd_header(in, frd) == apps::output::FrdStatus::ok) {
    std::array<std::byte, apps::output::kFrdHeaderSize> out{};
    apps::output::encode_frd_header(frd, out);
    require(std::memcmp(out.data(), data, out.size()) == 0);
  }
  apps::output::RawFileHeader raw;
  if (apps::output::decode_raw_file_header(in, raw) == apps::output::FrdStatus::ok) {
    std::array<std::byte, apps::output::kRawFileHeaderSize> out{};
    apps::output::encode_raw_file_header(raw, out);
    require(std::memcmp(out.data(), data, out.size()) == 0);
  }

  std::FILE* f = std::fopen(raw_path().c_str(), "wb");
  if (f == nullptr) return 0;
  const bool written = std::fwrite(data, 1, size, f) == size;
  std::fclose(f);
  if (written) {
    const apps::output::FileReport report = apps::output::check_frd_file(raw_path());
    require(!report.complete);  // no .jsn beside it
    require(report.bytes == size || !report.problems.empty());
  }
  return 0;
}
