#include "daqflow/wire/timeslice.hpp"

#include "daqflow/wire/endian.hpp"

namespace daqflow::wire {

void encode(const MicrosliceDescriptor& m, std::span<std::byte, kMicrosliceDescriptorSize> out) {
  std::byte* p = out.data();
  p[0] = static_cast<std::byte>(m.hdr_id);
  p[1] = static_cast<std::byte>(m.hdr_ver);
  store_le16(p + 2, m.eq_id);
  store_le16(p + 4, m.flags);
  p[6] = static_cast<std::byte>(m.sys_id);
  p[7] = static_cast<std::byte>(m.sys_ver);
  store_le64(p + 8, m.idx);
  store_le32(p + 16, m.crc);
  store_le32(p + 20, m.size);
  store_le64(p + 24, m.offset);
}

PayloadStatus decode(std::span<const std::byte, kMicrosliceDescriptorSize> in,
                     MicrosliceDescriptor& out) {
  const std::byte* p = in.data();
  MicrosliceDescriptor m;
  m.hdr_id = static_cast<std::uint8_t>(p[0]);
  m.hdr_ver = static_cast<std::uint8_t>(p[1]);
  if (m.hdr_id != kMicrosliceHeaderId || m.hdr_ver != kMicrosliceHeaderVersion) {
    return PayloadStatus::bad_value;
  }
  m.eq_id = load_le16(p + 2);
  m.flags = load_le16(p + 4);
  m.sys_id = static_cast<std::uint8_t>(p[6]);
  m.sys_ver = static_cast<std::uint8_t>(p[7]);
  m.idx = load_le64(p + 8);
  m.crc = load_le32(p + 16);
  m.size = load_le32(p + 20);
  m.offset = load_le64(p + 24);
  out = m;
  return PayloadStatus::ok;
}

void encode(const Contribution& m, std::span<std::byte, kContributionSize> out) {
  std::byte* p = out.data();
  store_le64(p, m.index);
  store_le64(p + 8, m.start_ns);
  store_le16(p + 16, m.eq_id);
  p[18] = static_cast<std::byte>(m.sys_id);
  p[19] = static_cast<std::byte>(m.sys_ver);
  store_le32(p + 20, m.microslices);
  store_le32(p + 24, m.core_microslices);
  store_le32(p + 28, m.epoch);
  store_le64(p + 32, m.content_size);
  store_le64(p + 40, 0);
}

PayloadStatus decode(std::span<const std::byte, kContributionSize> in, std::size_t payload_size,
                     Contribution& out) {
  const std::byte* p = in.data();
  if (load_le64(p + 40) != 0) return PayloadStatus::reserved_not_zero;
  Contribution m;
  m.index = load_le64(p);
  m.start_ns = load_le64(p + 8);
  m.eq_id = load_le16(p + 16);
  m.sys_id = static_cast<std::uint8_t>(p[18]);
  m.sys_ver = static_cast<std::uint8_t>(p[19]);
  m.microslices = load_le32(p + 20);
  m.core_microslices = load_le32(p + 24);
  m.epoch = load_le32(p + 28);
  m.content_size = load_le64(p + 32);
  if (m.core_microslices == 0 || m.core_microslices > m.microslices ||
      m.microslices > kMaxMicroslicesPerContribution) {
    return PayloadStatus::bad_count;
  }
  if (m.content_size > payload_size || wire::payload_size(m) != payload_size) {
    return PayloadStatus::sizes_mismatch;
  }
  out = m;
  return PayloadStatus::ok;
}

void encode(const TsAck& m, std::span<std::byte, kTsAckSize> out) {
  std::byte* p = out.data();
  store_le64(p, m.index);
  store_le32(p + 8, static_cast<std::uint32_t>(m.status));
  store_le32(p + 12, m.epoch);
}

PayloadStatus decode(std::span<const std::byte> in, TsAck& out) {
  if (in.size() != kTsAckSize) return PayloadStatus::wrong_size;
  const std::byte* p = in.data();
  const std::uint32_t status = load_le32(p + 8);
  if (status < 1 || status > 3) return PayloadStatus::bad_value;
  out.index = load_le64(p);
  out.status = static_cast<TsAckStatus>(status);
  out.epoch = load_le32(p + 12);
  return PayloadStatus::ok;
}

void encode(const TimesliceDescriptor& m, std::span<std::byte, kTimesliceDescriptorSize> out) {
  std::byte* p = out.data();
  store_le64(p, m.index);
  store_le64(p + 8, m.start_ns);
  store_le32(p + 16, m.microslice_ns);
  store_le32(p + 20, m.core_microslices);
  store_le32(p + 24, m.overlap_microslices);
  store_le16(p + 28, m.components_expected);
  store_le16(p + 30, m.components_present);
  store_le32(p + 32, m.flags);
  store_le32(p + 36, 0);
}

PayloadStatus decode(std::span<const std::byte, kTimesliceDescriptorSize> in,
                     TimesliceDescriptor& out) {
  const std::byte* p = in.data();
  if (load_le32(p + 36) != 0) return PayloadStatus::reserved_not_zero;
  TimesliceDescriptor m;
  m.index = load_le64(p);
  m.start_ns = load_le64(p + 8);
  m.microslice_ns = load_le32(p + 16);
  m.core_microslices = load_le32(p + 20);
  m.overlap_microslices = load_le32(p + 24);
  m.components_expected = load_le16(p + 28);
  m.components_present = load_le16(p + 30);
  m.flags = load_le32(p + 32);
  if ((m.flags & ~std::uint32_t{kTimesliceIncomplete}) != 0) return PayloadStatus::bad_value;
  if (m.components_present > m.components_expected || m.core_microslices == 0 ||
      m.microslice_ns == 0) {
    return PayloadStatus::bad_count;
  }
  if (m.components_present < m.components_expected && (m.flags & kTimesliceIncomplete) == 0) {
    return PayloadStatus::bad_value;
  }
  out = m;
  return PayloadStatus::ok;
}

void encode(const TsAssign& m, std::span<std::byte, kTsAssignSize> out) {
  std::byte* p = out.data();
  store_le64(p, m.index);
  store_le32(p + 8, m.builder);
  store_le32(p + 12, m.epoch);
}

PayloadStatus decode(std::span<const std::byte> in, TsAssign& out) {
  if (in.size() != kTsAssignSize) return PayloadStatus::wrong_size;
  const std::byte* p = in.data();
  out.index = load_le64(p);
  out.builder = load_le32(p + 8);
  out.epoch = load_le32(p + 12);
  return PayloadStatus::ok;
}

void encode(const TsReport& m, std::span<std::byte, kTsReportSize> out) {
  std::byte* p = out.data();
  store_le32(p, m.epoch);
  store_le32(p + 4, m.building);
  store_le32(p + 8, m.free_buffers);
  store_le32(p + 12, 0);
  store_le64(p + 16, m.done);
}

PayloadStatus decode(std::span<const std::byte> in, TsReport& out) {
  if (in.size() != kTsReportSize) return PayloadStatus::wrong_size;
  const std::byte* p = in.data();
  if (load_le32(p + 12) != 0) return PayloadStatus::reserved_not_zero;
  out.epoch = load_le32(p);
  out.building = load_le32(p + 4);
  out.free_buffers = load_le32(p + 8);
  out.reserved = 0;
  out.done = load_le64(p + 16);
  return PayloadStatus::ok;
}

void encode(const TsCommit& m, std::span<std::byte, kTsCommitSize> out) {
  std::byte* p = out.data();
  store_le64(p, m.index);
  store_le32(p + 8, m.epoch);
  store_le32(p + 12, static_cast<std::uint32_t>(m.answer));
}

PayloadStatus decode(std::span<const std::byte> in, TsCommit& out) {
  if (in.size() != kTsCommitSize) return PayloadStatus::wrong_size;
  const std::byte* p = in.data();
  const std::uint32_t answer = load_le32(p + 12);
  if (answer > 2) return PayloadStatus::bad_value;
  out.index = load_le64(p);
  out.epoch = load_le32(p + 8);
  out.answer = static_cast<CommitAnswer>(answer);
  return PayloadStatus::ok;
}

void encode(const TsDone& m, std::span<std::byte, kTsDoneSize> out) {
  std::byte* p = out.data();
  store_le64(p, m.index);
  store_le32(p + 8, m.epoch);
  store_le32(p + 12, m.incomplete);
}

PayloadStatus decode(std::span<const std::byte> in, TsDone& out) {
  if (in.size() != kTsDoneSize) return PayloadStatus::wrong_size;
  const std::byte* p = in.data();
  const std::uint32_t incomplete = load_le32(p + 12);
  if (incomplete > 1) return PayloadStatus::bad_value;
  out.index = load_le64(p);
  out.epoch = load_le32(p + 8);
  out.incomplete = incomplete;
  return PayloadStatus::ok;
}

}  // namespace daqflow::wire
