// The FRD event and raw file headers, byte for byte as CMSSW defines them, and CMS's file names.
#include <gtest/gtest.h>

#include <array>

#include "daqflow/apps/evb/frd.hpp"
#include "daqflow/wire/endian.hpp"

namespace daqflow::apps::evb {
namespace {

TEST(Frd, EventHeaderIsVersion6WithItsFieldsInCmsOrder) {
  std::array<std::byte, kFrdHeaderSize> bytes{};
  const FrdHeader in{6, 0, 17, 3, 0xabcdef, 4096, 0x12345678};
  encode_frd_header(in, bytes);
  EXPECT_EQ(wire::load_le16(bytes.data()), 6u);  // version, then flags
  EXPECT_EQ(wire::load_le16(bytes.data() + 2), 0u);
  EXPECT_EQ(wire::load_le32(bytes.data() + 4), 17u);  // run
  EXPECT_EQ(wire::load_le32(bytes.data() + 8), 3u);   // luminosity section
  EXPECT_EQ(wire::load_le32(bytes.data() + 12), 0xabcdefu);
  EXPECT_EQ(wire::load_le32(bytes.data() + 16), 4096u);  // bytes after the header
  EXPECT_EQ(wire::load_le32(bytes.data() + 20), 0x12345678u);
  FrdHeader out;
  ASSERT_EQ(decode_frd_header(bytes, out), FrdStatus::ok);
  EXPECT_EQ(out, in);
  bytes[0] = std::byte{5};
  EXPECT_EQ(decode_frd_header(bytes, out), FrdStatus::bad_version);
  EXPECT_EQ(decode_frd_header(std::span(bytes).first(23), out), FrdStatus::too_short);
}

TEST(Frd, RawFileHeaderIsVersion1) {
  std::array<std::byte, kRawFileHeaderSize> bytes{};
  const RawFileHeader in{400, 12, 123456789};
  encode_raw_file_header(in, bytes);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(bytes.data()), 8), "RAW_0001");
  EXPECT_EQ(wire::load_le16(bytes.data() + 8), 24u);  // header size
  EXPECT_EQ(wire::load_le16(bytes.data() + 10), 400u);
  EXPECT_EQ(wire::load_le32(bytes.data() + 12), 12u);
  EXPECT_EQ(wire::load_le64(bytes.data() + 16), 123456789u);
  RawFileHeader out;
  ASSERT_EQ(decode_raw_file_header(bytes, out), FrdStatus::ok);
  EXPECT_EQ(out, in);
  bytes[8] = std::byte{32};
  EXPECT_EQ(decode_raw_file_header(bytes, out), FrdStatus::bad_header_size);
  bytes[3] = std::byte{'X'};
  EXPECT_EQ(decode_raw_file_header(bytes, out), FrdStatus::bad_magic);
}

TEST(Frd, NamesAsCmsWritesThem) {
  EXPECT_EQ(frd_run_dir(17), "run000017");
  EXPECT_EQ(frd_data_stem(17, 3, 12), "run000017_ls0003_index000012");
  EXPECT_EQ(frd_eols_name(17, 3), "run000017_ls0003_EoLS.jsn");
  EXPECT_EQ(frd_eor_name(17), "run000017_ls0000_EoR.jsn");
}

}  // namespace
}  // namespace daqflow::apps::evb
