#include "daqflow/wire/timeslice.hpp"

#include "daqflow/wire/layout.hpp"

namespace daqflow::wire {
namespace {

using layout::Field;
using layout::Reserved;
using MD = MicrosliceDescriptor;
using TD = TimesliceDescriptor;

using MicrosliceLayout =
    layout::Message<MD, kMicrosliceDescriptorSize, Field<&MD::hdr_id, 0>, Field<&MD::hdr_ver, 1>,
                    Field<&MD::eq_id, 2>, Field<&MD::flags, 4>, Field<&MD::sys_id, 6>,
                    Field<&MD::sys_ver, 7>, Field<&MD::idx, 8>, Field<&MD::crc, 16>,
                    Field<&MD::size, 20>, Field<&MD::offset, 24>>;
using ContributionLayout =
    layout::Message<Contribution, kContributionSize, Field<&Contribution::index, 0>,
                    Field<&Contribution::start_ns, 8>, Field<&Contribution::eq_id, 16>,
                    Field<&Contribution::sys_id, 18>, Field<&Contribution::sys_ver, 19>,
                    Field<&Contribution::microslices, 20>,
                    Field<&Contribution::core_microslices, 24>, Field<&Contribution::epoch, 28>,
                    Field<&Contribution::content_size, 32>, Reserved<40, 8>>;
using TsAckLayout = layout::Message<TsAck, kTsAckSize, Field<&TsAck::index, 0>,
                                    Field<&TsAck::status, 8>, Field<&TsAck::epoch, 12>>;
using TsTurnLayout = layout::Message<TsTurn, kTsTurnSize, Field<&TsTurn::kind, 0>, Reserved<4, 4>>;
using TimesliceLayout =
    layout::Message<TD, kTimesliceDescriptorSize, Field<&TD::index, 0>, Field<&TD::start_ns, 8>,
                    Field<&TD::microslice_ns, 16>, Field<&TD::core_microslices, 20>,
                    Field<&TD::overlap_microslices, 24>, Field<&TD::components_expected, 28>,
                    Field<&TD::components_present, 30>, Field<&TD::flags, 32>, Reserved<36, 4>>;
using TsAssignLayout = layout::Message<TsAssign, kTsAssignSize, Field<&TsAssign::index, 0>,
                                       Field<&TsAssign::builder, 8>, Field<&TsAssign::epoch, 12>>;
using TsReportLayout =
    layout::Message<TsReport, kTsReportSize, Field<&TsReport::epoch, 0>,
                    Field<&TsReport::building, 4>, Field<&TsReport::free_buffers, 8>,
                    Reserved<12, 4>, Field<&TsReport::done, 16>>;
using TsCommitLayout = layout::Message<TsCommit, kTsCommitSize, Field<&TsCommit::index, 0>,
                                       Field<&TsCommit::epoch, 8>, Field<&TsCommit::answer, 12>>;
using TsDoneLayout = layout::Message<TsDone, kTsDoneSize, Field<&TsDone::index, 0>,
                                     Field<&TsDone::epoch, 8>, Field<&TsDone::incomplete, 12>>;

PayloadStatus valid_if(bool valid) {
  return valid ? PayloadStatus::ok : PayloadStatus::bad_value;
}

}  // namespace

void encode(const MicrosliceDescriptor& m, std::span<std::byte, kMicrosliceDescriptorSize> out) {
  MicrosliceLayout::store(m, out);
}

PayloadStatus decode(std::span<const std::byte, kMicrosliceDescriptorSize> in,
                     MicrosliceDescriptor& out) {
  return MicrosliceLayout::decode(in, out, [](const MD& m) {
    return valid_if(m.hdr_id == kMicrosliceHeaderId && m.hdr_ver == kMicrosliceHeaderVersion);
  });
}

void encode(const Contribution& m, std::span<std::byte, kContributionSize> out) {
  ContributionLayout::store(m, out);
}

PayloadStatus decode(std::span<const std::byte, kContributionSize> in, std::size_t payload_size,
                     Contribution& out) {
  return ContributionLayout::decode(in, out, [&](const Contribution& m) {
    if (m.core_microslices == 0 || m.core_microslices > m.microslices ||
        m.microslices > kMaxMicroslicesPerContribution) {
      return PayloadStatus::bad_count;
    }
    if (m.content_size > payload_size || wire::payload_size(m) != payload_size) {
      return PayloadStatus::sizes_mismatch;
    }
    return PayloadStatus::ok;
  });
}

std::uint64_t contribution_size(std::span<const std::byte, kContributionSize> in,
                                std::uint64_t left) {
  Contribution m;
  const PayloadStatus s = ContributionLayout::decode(in, m, [](const Contribution& c) {
    return valid_if(c.core_microslices != 0 && c.core_microslices <= c.microslices &&
                    c.microslices <= kMaxMicroslicesPerContribution);
  });
  if (s != PayloadStatus::ok || m.content_size > left) return 0;
  const std::uint64_t size = payload_size(m);
  return size <= left ? size : 0;
}

void encode(const TsAck& m, std::span<std::byte, kTsAckSize> out) {
  TsAckLayout::store(m, out);
}

PayloadStatus decode(std::span<const std::byte> in, TsAck& out) {
  return TsAckLayout::decode(in, out, [](const TsAck& m) {
    return valid_if(m.status >= TsAckStatus::complete && m.status <= TsAckStatus::late);
  });
}

void encode(const TsTurn& m, std::span<std::byte, kTsTurnSize> out) {
  TsTurnLayout::store(m, out);
}

PayloadStatus decode(std::span<const std::byte> in, TsTurn& out) {
  return TsTurnLayout::decode(in, out, [](const TsTurn& m) {
    return valid_if(m.kind >= TsTurnKind::ask && m.kind <= TsTurnKind::hand_back_and_ask);
  });
}

void encode(const TimesliceDescriptor& m, std::span<std::byte, kTimesliceDescriptorSize> out) {
  TimesliceLayout::store(m, out);
}

PayloadStatus decode(std::span<const std::byte, kTimesliceDescriptorSize> in,
                     TimesliceDescriptor& out) {
  return TimesliceLayout::decode(in, out, [](const TD& m) {
    if ((m.flags & ~std::uint32_t{kTimesliceIncomplete}) != 0) return PayloadStatus::bad_value;
    if (m.components_present > m.components_expected || m.core_microslices == 0 ||
        m.microslice_ns == 0) {
      return PayloadStatus::bad_count;
    }
    const bool flagged = (m.flags & kTimesliceIncomplete) != 0;
    return valid_if(m.components_present == m.components_expected || flagged);
  });
}

void encode(const TsAssign& m, std::span<std::byte, kTsAssignSize> out) {
  TsAssignLayout::store(m, out);
}

PayloadStatus decode(std::span<const std::byte> in, TsAssign& out) {
  return TsAssignLayout::decode(in, out);
}

void encode(const TsReport& m, std::span<std::byte, kTsReportSize> out) {
  TsReportLayout::store(m, out);
}

PayloadStatus decode(std::span<const std::byte> in, TsReport& out) {
  return TsReportLayout::decode(in, out);
}

void encode(const TsCommit& m, std::span<std::byte, kTsCommitSize> out) {
  TsCommitLayout::store(m, out);
}

PayloadStatus decode(std::span<const std::byte> in, TsCommit& out) {
  return TsCommitLayout::decode(
      in, out, [](const TsCommit& m) { return valid_if(m.answer <= CommitAnswer::denied); });
}

void encode(const TsDone& m, std::span<std::byte, kTsDoneSize> out) {
  TsDoneLayout::store(m, out);
}

PayloadStatus decode(std::span<const std::byte> in, TsDone& out) {
  return TsDoneLayout::decode(in, out, [](const TsDone& m) { return valid_if(m.incomplete <= 1); });
}

}  // namespace daqflow::wire
