// The RU's FED network input, fed through real TCP sockets on 127.0.0.1 (ports 23400-23699):
// good streams, CRC errors, events out of sequence, truncated streams, marking and back-pressure,
// in frames; FEROL blocks cut at random points, and every kind of bad block.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <random>
#include <regex>
#include <thread>

#include "apps/output/test_event_file_support.hpp"
#include "daqflow/apps/fed/fed_stream.hpp"
#include "daqflow/apps/fed/network_input.hpp"
#include "daqflow/wire/endian.hpp"
#include "daqflow/wire/evb.hpp"
#include "daqflow/wire/fed.hpp"
#include "daqflow/wire/ferol.hpp"

namespace daqflow::apps::fed {
namespace {

using namespace std::chrono_literals;
using output::testing::make_fragment;

// A blocking TCP client that writes a FED stream.
class Sender {
 public:
  explicit Sender(std::uint16_t port) {
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (std::chrono::steady_clock::now() < deadline) {
      fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in sa{};
      sa.sin_family = AF_INET;
      sa.sin_port = htons(port);
      sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      if (::connect(fd_, reinterpret_cast<const sockaddr*>(&sa), sizeof sa) == 0) return;
      ::close(fd_);
      fd_ = -1;
      std::this_thread::sleep_for(10ms);
    }
    ADD_FAILURE() << "cannot connect to port " << port;
  }
  ~Sender() { close(); }
  Sender(const Sender&) = delete;
  Sender& operator=(const Sender&) = delete;

  void send(std::span<const std::byte> bytes) {
    std::size_t done = 0;
    while (fd_ >= 0 && done < bytes.size()) {
      const ssize_t n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
      if (n <= 0) return;  // the input stopped reading this stream (it failed)
      done += static_cast<std::size_t>(n);
    }
  }
  // Frame header + fragment.
  void send_fragment(std::uint16_t frame_fed, std::uint64_t frame_event,
                     std::span<const std::byte> fragment) {
    std::array<std::byte, kFedFrameHeaderSize> header{};
    EXPECT_EQ(
        encode_fed_frame({static_cast<std::uint32_t>(fragment.size() / 8), frame_fed, frame_event},
                         header),
        FedFrameStatus::ok);
    send(header);
    send(fragment);
  }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

// Frames unless a test asks for FEROL blocks.
NetworkInputSettings settings(std::uint16_t port, std::uint16_t first_fed, std::size_t feds) {
  NetworkInputSettings s;
  s.framing = FedFraming::frame;
  s.port = port;
  for (std::size_t i = 0; i < feds; ++i)
    s.fed_ids.push_back(static_cast<std::uint16_t>(first_fed + i));
  s.max_fragment_bytes = 4096;
  s.buffer_bytes_per_fed = 256 * 1024;
  s.name = "test input";
  return s;
}

std::unique_ptr<FragmentSource> make(const NetworkInputSettings& s) {
  auto input = make_network_input(s);
  EXPECT_TRUE(input.ok()) << input.error().message();
  return input.ok() ? std::move(*input) : nullptr;
}

// produce() until the event is ready, fails or 10 s pass.
Produced produce(FragmentSource& input, std::uint64_t event, std::span<std::byte> out) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  for (;;) {
    const Produced p = input.produce(event, out);
    if (p.status != Produced::Status::not_ready || std::chrono::steady_clock::now() > deadline) {
      return p;
    }
    std::this_thread::sleep_for(100us);
  }
}

std::size_t fragment_size(std::size_t fed, std::uint64_t event) {
  return 16 + 8 * ((event * 37 + fed * 11) % 400);
}

// The fragment's CRC field (trailer bits 31..16) flipped.
std::vector<std::byte> with_bad_crc(std::vector<std::byte> fragment) {
  fragment[fragment.size() - 8 + 2] ^= std::byte{0xff};
  return fragment;
}

TEST(NetworkInput, DeliversGoodStreamsInFedOrderUnderBackPressure) {
  const auto s = settings(23400, 700, 3);
  auto input = make(s);
  ASSERT_TRUE(input);
  constexpr std::uint64_t kEvents = 3000;  // ~1 MB per FED through 256 KB of staging memory
  std::vector<std::thread> senders;
  for (std::size_t f = 0; f < 3; ++f) {
    senders.emplace_back([f] {
      Sender sender(static_cast<std::uint16_t>(23400 + f));
      for (std::uint64_t e = 0; e < kEvents; ++e) {
        sender.send_fragment(
            static_cast<std::uint16_t>(700 + f), e,
            make_fragment(static_cast<std::uint16_t>(700 + f), e, fragment_size(f, e)));
      }
    });
  }
  std::this_thread::sleep_for(200ms);  // let the staging memory fill: senders must wait
  std::vector<std::byte> out(input->max_super_fragment_size());
  for (std::uint64_t e = 0; e < kEvents; ++e) {
    const Produced p = produce(*input, e, out);
    ASSERT_EQ(p.status, Produced::Status::ready) << "event " << e << ": " << input->failure();
    EXPECT_EQ(p.flags, 0u);
    std::vector<std::byte> expected;
    for (std::size_t f = 0; f < 3; ++f) {
      const auto frag = make_fragment(static_cast<std::uint16_t>(700 + f), e, fragment_size(f, e));
      expected.insert(expected.end(), frag.begin(), frag.end());
    }
    ASSERT_EQ(p.bytes, expected.size()) << "event " << e;
    ASSERT_TRUE(std::equal(expected.begin(), expected.end(), out.begin())) << "event " << e;
  }
  for (auto& t : senders) t.join();
  const FragmentSourceStats stats = input->stats();
  EXPECT_EQ(stats.events, kEvents);
  EXPECT_EQ(stats.fragments, 3 * kEvents);
  EXPECT_EQ(stats.fragment_errors, 0u);
  EXPECT_EQ(stats.crc_checked, 3 * kEvents);
  EXPECT_TRUE(input->failure().empty());
  EXPECT_EQ(input->fed_count(), 3u);
}

TEST(NetworkInput, ACrcErrorFailsWithTheFedIdAndEventNumber) {
  auto input = make(settings(23410, 710, 2));
  ASSERT_TRUE(input);
  Sender a(23410);
  Sender b(23411);
  for (std::uint64_t e = 0; e < 8; ++e) {
    a.send_fragment(710, e, make_fragment(710, e, 128));
    auto frag = make_fragment(711, e, 128);
    b.send_fragment(711, e, e == 5 ? with_bad_crc(frag) : frag);
  }
  std::vector<std::byte> out(input->max_super_fragment_size());
  Produced p;
  for (std::uint64_t e = 0; e < 8; ++e) {
    p = produce(*input, e, out);
    if (p.status != Produced::Status::ready) break;
  }
  EXPECT_EQ(p.status, Produced::Status::failed);
  EXPECT_TRUE(std::regex_match(
      input->failure(),
      std::regex(
          "FED 711 event 5: CRC mismatch \\(trailer 0x[0-9a-f]{4}, computed 0x[0-9a-f]{4}\\)")))
      << input->failure();
  EXPECT_EQ(input->stats().fragment_errors, 1u);
}

TEST(NetworkInput, MarkModeFlagsTheEventCorruptedAndGoesOn) {
  auto s = settings(23420, 720, 2);
  s.on_error = OnFragmentError::mark;
  auto input = make(s);
  ASSERT_TRUE(input);
  Sender a(23420);
  Sender b(23421);
  for (std::uint64_t e = 0; e < 10; ++e) {
    auto frag = make_fragment(720, e, 64);
    a.send_fragment(720, e, e == 5 ? with_bad_crc(frag) : frag);
    b.send_fragment(721, e, make_fragment(721, e, 64));
  }
  std::vector<std::byte> out(input->max_super_fragment_size());
  for (std::uint64_t e = 0; e < 10; ++e) {
    const Produced p = produce(*input, e, out);
    ASSERT_EQ(p.status, Produced::Status::ready) << e;
    EXPECT_EQ(p.flags, e == 5 ? std::uint32_t{wire::kEventCorrupted} : 0u) << e;
    EXPECT_EQ(p.bytes, 128u);
  }
  EXPECT_TRUE(input->failure().empty());
  EXPECT_EQ(input->stats().fragment_errors, 1u);
}

TEST(NetworkInput, ChecksTheCrcOfEveryNthEventOnly) {
  for (const std::uint32_t every : {0u, 2u}) {
    auto s = settings(static_cast<std::uint16_t>(23430 + every), 730, 1);
    s.crc_check_every = every;
    auto input = make(s);
    ASSERT_TRUE(input);
    Sender a(s.port);
    for (std::uint64_t e = 0; e < 10; ++e) {
      auto frag = make_fragment(730, e, 64);
      a.send_fragment(730, e, e == 3 ? with_bad_crc(frag) : frag);  // 3 is odd: never checked
    }
    std::vector<std::byte> out(input->max_super_fragment_size());
    for (std::uint64_t e = 0; e < 10; ++e) {
      ASSERT_EQ(produce(*input, e, out).status, Produced::Status::ready) << "every " << every;
    }
    EXPECT_EQ(input->stats().fragment_errors, 0u);
    EXPECT_EQ(input->stats().crc_checked, every == 0 ? 0u : 5u);
  }
}

TEST(NetworkInput, AnEventOutOfSequenceIsReported) {
  auto input = make(settings(23440, 740, 1));
  ASSERT_TRUE(input);
  Sender a(23440);
  a.send_fragment(740, 0, make_fragment(740, 0, 64));
  a.send_fragment(740, 1, make_fragment(740, 1, 64));
  a.send_fragment(740, 3, make_fragment(740, 3, 64));  // event 2 is missing
  std::vector<std::byte> out(input->max_super_fragment_size());
  Produced p;
  for (std::uint64_t e = 0;
       e < 3 && (p = produce(*input, e, out)).status == Produced::Status::ready; ++e) {
  }
  EXPECT_EQ(p.status, Produced::Status::failed);
  EXPECT_EQ(input->failure(),
            "FED 740 event 2: event number out of sequence (the frame header says event 3, "
            "expected 2)");
}

TEST(NetworkInput, AFragmentWithTheWrongL1IdIsReported) {
  auto s = settings(23450, 750, 1);
  s.on_error = OnFragmentError::mark;
  auto input = make(s);
  ASSERT_TRUE(input);
  Sender a(23450);
  a.send_fragment(750, 0, make_fragment(750, 0, 64));
  a.send_fragment(750, 1, make_fragment(750, 7, 64));  // framed as event 1, the FED says 7
  a.send_fragment(750, 2, make_fragment(999, 2, 64));  // another FED's fragment
  std::vector<std::byte> out(input->max_super_fragment_size());
  EXPECT_EQ(produce(*input, 0, out).flags, 0u);
  EXPECT_EQ(produce(*input, 1, out).flags, std::uint32_t{wire::kEventCorrupted});
  EXPECT_EQ(produce(*input, 2, out).flags, std::uint32_t{wire::kEventCorrupted});
  EXPECT_EQ(input->stats().fragment_errors, 2u);
}

TEST(NetworkInput, ATruncatedStreamFails) {
  auto input = make(settings(23460, 760, 1));
  ASSERT_TRUE(input);
  {
    Sender a(23460);
    a.send_fragment(760, 0, make_fragment(760, 0, 64));
    const auto frag = make_fragment(760, 1, 256);
    std::array<std::byte, kFedFrameHeaderSize> header{};
    ASSERT_EQ(encode_fed_frame({256 / 8, 760, 1}, header), FedFrameStatus::ok);
    a.send(header);
    a.send(std::span(frag).first(100));
  }  // closed within event 1's fragment
  std::vector<std::byte> out(input->max_super_fragment_size());
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (input->failure().empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
  EXPECT_TRUE(std::regex_match(input->failure(),
                               std::regex("FED 760 event 1: stream truncated: the connection from "
                                          "127\\.0\\.0\\.1:[0-9]+ closed within the fragment "
                                          "\\(100 of 256 bytes received\\)")))
      << input->failure();
  EXPECT_EQ(input->produce(0, out).status, Produced::Status::failed);
}

TEST(NetworkInput, AStreamMayResumeOnANewConnection) {
  auto input = make(settings(23470, 770, 1));
  ASSERT_TRUE(input);
  std::vector<std::byte> out(input->max_super_fragment_size());
  {
    Sender a(23470);
    for (std::uint64_t e = 0; e < 5; ++e) a.send_fragment(770, e, make_fragment(770, e, 64));
  }
  for (std::uint64_t e = 0; e < 5; ++e)
    ASSERT_EQ(produce(*input, e, out).status, Produced::Status::ready);
  Sender b(23470);
  for (std::uint64_t e = 5; e < 10; ++e) b.send_fragment(770, e, make_fragment(770, e, 64));
  for (std::uint64_t e = 5; e < 10; ++e) {
    ASSERT_EQ(produce(*input, e, out).status, Produced::Status::ready) << input->failure();
  }
}

TEST(NetworkInput, AsksForRoomWhenTheOutputIsTooSmall) {
  auto input = make(settings(23480, 780, 2));
  ASSERT_TRUE(input);
  Sender a(23480);
  Sender b(23481);
  a.send_fragment(780, 0, make_fragment(780, 0, 512));
  b.send_fragment(781, 0, make_fragment(781, 0, 512));
  std::vector<std::byte> small(1000);
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  Produced p;
  while ((p = input->produce(0, small)).status == Produced::Status::not_ready &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
  EXPECT_EQ(p.status, Produced::Status::no_room);
  std::vector<std::byte> big(1024);
  EXPECT_EQ(input->produce(0, big).status, Produced::Status::ready);
}

TEST(NetworkInput, ABusyPortNamesTheFedAndThePort) {
  auto first = make(settings(23490, 790, 2));
  ASSERT_TRUE(first);
  auto second = make_network_input(settings(23491, 800, 1));
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.error().message().find("FED 800: cannot listen on 127.0.0.1:23491"),
            std::string::npos)
      << second.error().message();
}

TEST(FedStream, FrameHeaderRoundTripsAndRefusesGarbage) {
  std::array<std::byte, kFedFrameHeaderSize> bytes{};
  const FedFrameHeader in{0xabcdef, 0xfff, kFedFrameMaxEvent};
  ASSERT_EQ(encode_fed_frame(in, bytes), FedFrameStatus::ok);
  FedFrameHeader out;
  ASSERT_EQ(decode_fed_frame(bytes, out), FedFrameStatus::ok);
  EXPECT_EQ(out, in);
  EXPECT_EQ(encode_fed_frame({1, 0x1000, 0}, bytes), FedFrameStatus::field_out_of_range);
  bytes[7] = std::byte{0};
  EXPECT_EQ(decode_fed_frame(bytes, out), FedFrameStatus::bad_signature);
  ASSERT_EQ(encode_fed_frame(in, bytes), FedFrameStatus::ok);
  bytes[15] |= std::byte{0x80};
  EXPECT_EQ(decode_fed_frame(bytes, out), FedFrameStatus::reserved_bits);
  EXPECT_EQ(decode_fed_frame(std::span(bytes).first(15), out), FedFrameStatus::too_short);
}

// FEROL blocks of a fragment, `block_data` bytes of it per block, each header then changed by
// `edit` (block index, header) to make it bad.
std::vector<std::byte> ferol_blocks(
    std::uint16_t fed, std::span<const std::byte> fragment, std::size_t block_data,
    const std::function<void(std::size_t, wire::FerolHeader&)>& edit = {}) {
  wire::FedHeaderFields header;
  EXPECT_EQ(wire::decode_header(fragment, header), wire::FedStatus::ok);
  std::vector<std::byte> out;
  const std::size_t blocks = (fragment.size() + block_data - 1) / block_data;
  for (std::size_t b = 0; b < blocks; ++b) {
    const std::size_t from = b * block_data;
    const std::size_t length = std::min(block_data, fragment.size() - from);
    wire::FerolHeader h{static_cast<std::uint32_t>(length),
                        static_cast<std::uint32_t>(b),
                        b == 0,
                        b + 1 == blocks,
                        fed,
                        header.l1_id};
    if (edit) edit(b, h);
    std::array<std::byte, wire::kFerolHeaderSize> bytes{};
    const auto status = wire::encode_ferol_header(h, bytes);
    if (status == wire::FerolStatus::bad_length) {  // written anyway: the test wants it on the wire
      wire::store_be64(bytes.data(), std::uint64_t{wire::kFerolSignature} << 48 |
                                         std::uint64_t{h.packet} << 32 |
                                         std::uint64_t{h.first} << 31 |
                                         std::uint64_t{h.last} << 30 | (h.data_length / 8 & 0x3ff));
      wire::store_be64(bytes.data() + 8, std::uint64_t{h.fed_id} << 32 | h.event);
    }
    out.insert(out.end(), bytes.begin(), bytes.end());
    out.insert(out.end(), fragment.begin() + static_cast<std::ptrdiff_t>(from),
               fragment.begin() + static_cast<std::ptrdiff_t>(from + length));
  }
  return out;
}

NetworkInputSettings ferol_settings(std::uint16_t port, std::uint16_t first_fed, std::size_t feds) {
  NetworkInputSettings s = settings(port, first_fed, feds);
  s.framing = FedFraming::ferol;
  s.max_fragment_bytes = 65536;
  s.buffer_bytes_per_fed = 1u << 20;
  return s;
}

// Fragment sizes from 16 B to 64 kB.
std::size_t ferol_fragment_size(std::size_t fed, std::uint64_t event) {
  static constexpr std::array<std::size_t, 9> kSizes{16,   24,   4080,  4088, 4096,
                                                     8160, 8168, 30000, 65536};
  return kSizes[(event + fed) % kSizes.size()] / 8 * 8;
}

TEST(NetworkInput, FerolBlocksCutAtRandomPointsAreReassembled) {
  const auto s = ferol_settings(23600, 600, 2);
  auto input = make(s);
  ASSERT_TRUE(input);
  constexpr std::uint64_t kEvents = 400;
  std::vector<std::thread> senders;
  for (std::size_t f = 0; f < 2; ++f) {
    senders.emplace_back([f] {
      const auto fed = static_cast<std::uint16_t>(600 + f);
      std::vector<std::byte> stream;
      for (std::uint64_t e = 0; e < kEvents; ++e) {
        // Full blocks as a FEROL sends them, and for some events smaller ones (at most 2048
        // blocks: the packet number has 11 bits).
        const std::size_t size = ferol_fragment_size(f, e);
        const std::size_t block_data =
            e % 5 == 4 ? std::max<std::size_t>(8 * (1 + e % 97), (size / 2040 + 7) / 8 * 8)
                       : wire::kFerolMaxBlockData;
        const auto blocks = ferol_blocks(fed, make_fragment(fed, e, size), block_data);
        stream.insert(stream.end(), blocks.begin(), blocks.end());
      }
      // Written in pieces of random length: headers and data split anywhere between writes
      // (and so between the input's reads).
      Sender sender(static_cast<std::uint16_t>(23600 + f));
      std::mt19937_64 rng(f + 1);
      for (std::size_t at = 0; at < stream.size();) {
        const std::size_t n = std::min<std::size_t>(1 + rng() % 9000, stream.size() - at);
        sender.send(std::span(stream).subspan(at, n));
        at += n;
      }
    });
  }
  std::vector<std::byte> out(input->max_super_fragment_size());
  for (std::uint64_t e = 0; e < kEvents; ++e) {
    const Produced p = produce(*input, e, out);
    ASSERT_EQ(p.status, Produced::Status::ready) << "event " << e << ": " << input->failure();
    EXPECT_EQ(p.flags, 0u);
    std::vector<std::byte> expected;
    for (std::size_t f = 0; f < 2; ++f) {
      const auto fed = static_cast<std::uint16_t>(600 + f);
      const auto frag = make_fragment(fed, e, ferol_fragment_size(f, e));
      expected.insert(expected.end(), frag.begin(), frag.end());
    }
    ASSERT_EQ(p.bytes, expected.size()) << "event " << e;
    ASSERT_TRUE(std::equal(expected.begin(), expected.end(), out.begin())) << "event " << e;
  }
  for (auto& t : senders) t.join();
  EXPECT_EQ(input->stats().fragments, 2 * kEvents);
  EXPECT_EQ(input->stats().fragment_errors, 0u);
  EXPECT_EQ(input->stats().crc_checked, 2 * kEvents);
}

// Events 0 and 1 good, event 2 (three blocks of 4080 bytes and a last one) spoilt by `edit` (or
// its fragment by `edit_fragment`): the input fails with `expected` (a regex).
void expect_bad_block(
    std::uint16_t port, const std::function<void(std::size_t, wire::FerolHeader&)>& edit,
    const std::string& expected,
    const std::function<std::vector<std::byte>(std::vector<std::byte>)>& edit_fragment = {}) {
  SCOPED_TRACE(expected);
  constexpr std::uint16_t kFed = 650;
  auto input = make(ferol_settings(port, kFed, 1));
  ASSERT_TRUE(input);
  Sender a(port);
  for (std::uint64_t e = 0; e < 2; ++e) {
    a.send(ferol_blocks(kFed, make_fragment(kFed, e, 5000), wire::kFerolMaxBlockData));
  }
  auto fragment = make_fragment(kFed, 2, 14000);
  if (edit_fragment) fragment = edit_fragment(std::move(fragment));
  a.send(ferol_blocks(kFed, fragment, wire::kFerolMaxBlockData, edit));
  a.close();
  std::vector<std::byte> out(input->max_super_fragment_size());
  // Events 0 and 1 may be taken before the input sees event 2's blocks (then it takes none).
  Produced p;
  for (std::uint64_t e = 0;
       e < 3 && (p = produce(*input, e, out)).status == Produced::Status::ready; ++e) {
  }
  EXPECT_EQ(p.status, Produced::Status::failed);
  EXPECT_TRUE(std::regex_match(input->failure(), std::regex(expected))) << input->failure();
}

TEST(NetworkInput, EveryKindOfBadFerolBlockNamesTheFedTheEventAndTheBlock) {
  using H = wire::FerolHeader;
  expect_bad_block(
      23610, [](std::size_t b, H& h) { h.fed_id = b == 1 ? 651 : h.fed_id; },
      "FED 650 event 2: block 1: the FEROL header names FED 651 \\(wrong connection\\?\\)");
  expect_bad_block(
      23611, [](std::size_t b, H& h) { h.packet = b == 2 ? 3 : h.packet; },
      "FED 650 event 2: block 2: packet number 3, expected 2 \\(blocks out of order or lost\\)");
  expect_bad_block(
      23612, [](std::size_t b, H& h) { h.first = b == 0 ? false : h.first; },
      "FED 650 event 2: block 0: the fragment's first block lacks the first-block flag");
  expect_bad_block(
      23613, [](std::size_t b, H& h) { h.first = h.first || b == 1; },
      "FED 650 event 2: block 1: first-block flag within a fragment \\(its last block missing\\)");
  expect_bad_block(
      23614, [](std::size_t b, H& h) { h.event = b == 3 ? h.event + 1 : h.event; },
      "FED 650 event 2: block 3: the FEROL header says event number 3, the fragment's first "
      "block 2");
  expect_bad_block(
      23615, [](std::size_t b, H& h) { h.data_length = b == 1 ? 4088 : h.data_length; },
      "FED 650 event 2: block 1: FEROL block length is 0 or above 4080 bytes from "
      "127\\.0\\.0\\.1:[0-9]+");
  expect_bad_block(
      23616, [](std::size_t, H& h) { h.event += 1; },
      "FED 650 event 2: event number out of sequence \\(the FEROL header says event 3, "
      "expected 2\\)");
  // The last-block flag one block early: the fragment ends short of its trailer (a payload word
  // where the trailer should be: no EOE marker, or by chance one with a wrong length).
  expect_bad_block(
      23617, [](std::size_t b, H& h) { h.last = h.last || b == 2; },
      "FED 650 event 2: (no FED trailer \\(EOE 0x[0-9a-f], expected 0xa\\)|trailer length [0-9]+ "
      "words, but the fragment has 1530 words)");
  // Blocks that carry more than the trailer counts.
  expect_bad_block(23618, {},
                   "FED 650 event 2: trailer length 1750 words, but the fragment has 1751 words",
                   [](std::vector<std::byte> fragment) {
                     // One word more before the trailer; the trailer still counts the old length.
                     fragment.insert(fragment.end() - 8, 8, std::byte{0});
                     return fragment;
                   });
  // A block of no data.
  expect_bad_block(
      23619, [](std::size_t b, H& h) { h.data_length = b == 2 ? 0 : h.data_length; },
      "FED 650 event 2: block 2: FEROL block length is 0 or above 4080 bytes from "
      "127\\.0\\.0\\.1:[0-9]+");
}

TEST(NetworkInput, AFerolStreamWithABadSignatureOrTooLargeAFragmentFails) {
  {
    auto input = make(ferol_settings(23620, 660, 1));
    ASSERT_TRUE(input);
    Sender a(23620);
    auto blocks = ferol_blocks(660, make_fragment(660, 0, 64), wire::kFerolMaxBlockData);
    blocks[1] ^= std::byte{0x01};  // in the signature
    a.send(blocks);
    std::vector<std::byte> out(input->max_super_fragment_size());
    EXPECT_EQ(produce(*input, 0, out).status, Produced::Status::failed);
    EXPECT_TRUE(std::regex_match(
        input->failure(), std::regex("FED 660 event 0: block 0: bad FEROL signature \\(the stream "
                                     "is out of step\\) from 127\\.0\\.0\\.1:[0-9]+")))
        << input->failure();
  }
  {
    auto s = ferol_settings(23621, 661, 1);
    s.max_fragment_bytes = 8192;
    auto input = make(s);
    ASSERT_TRUE(input);
    Sender a(23621);
    a.send(ferol_blocks(661, make_fragment(661, 0, 9000), wire::kFerolMaxBlockData));
    std::vector<std::byte> out(input->max_super_fragment_size());
    EXPECT_EQ(produce(*input, 0, out).status, Produced::Status::failed);
    EXPECT_EQ(input->failure(),
              "FED 661 event 0: block 2: the fragment passes the maximum of 8192 bytes "
              "(fed_max_fragment_bytes)");
  }
}

TEST(NetworkInput, AFerolStreamClosedWithinABlockFails) {
  auto input = make(ferol_settings(23630, 670, 1));
  ASSERT_TRUE(input);
  {
    Sender a(23630);
    const auto blocks = ferol_blocks(670, make_fragment(670, 0, 6000), wire::kFerolMaxBlockData);
    a.send(std::span(blocks).first(wire::kFerolHeaderSize + 4080 + wire::kFerolHeaderSize + 100));
  }
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (input->failure().empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
  EXPECT_TRUE(std::regex_match(input->failure(),
                               std::regex("FED 670 event 0: stream truncated: the connection from "
                                          "127\\.0\\.0\\.1:[0-9]+ closed within block 1 \\(100 of "
                                          "its 1920 bytes received\\)")))
      << input->failure();
}

// The header's bytes as a CMS reader sees them: word 0 signature 0x475a, packet 1500 (bits
// 42..32), first and last (31, 30), 510 words (9..0); word 1 FED 0x4d2 (43..32), event 0x123456;
// each word most significant byte first.
TEST(Ferol, HeaderIsLaidOutAsCmsEquipmentSendsIt) {
  std::array<std::byte, wire::kFerolHeaderSize> bytes{};
  ASSERT_EQ(wire::encode_ferol_header({4080, 1500, true, true, 0x4d2, 0x123456}, bytes),
            wire::FerolStatus::ok);
  const std::array<std::uint8_t, 16> expected{0x47, 0x5a, 0x05, 0xdc, 0xc0, 0x00, 0x01, 0xfe,
                                              0x00, 0x00, 0x04, 0xd2, 0x00, 0x12, 0x34, 0x56};
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(std::to_integer<std::uint8_t>(bytes[i]), expected[i]) << "byte " << i;
  }
}

TEST(Ferol, HeaderRoundTripsAndRefusesGarbage) {
  std::array<std::byte, wire::kFerolHeaderSize> bytes{};
  const wire::FerolHeader in{4080, wire::kFerolMaxPacket, true, true, 0xfff, wire::kFerolMaxEvent};
  ASSERT_EQ(wire::encode_ferol_header(in, bytes), wire::FerolStatus::ok);
  wire::FerolHeader out;
  ASSERT_EQ(wire::decode_ferol_header(bytes, out), wire::FerolStatus::ok);
  EXPECT_EQ(out, in);
  EXPECT_EQ(wire::encode_ferol_header({8, 0, true, true, 0x1000, 0}, bytes),
            wire::FerolStatus::field_out_of_range);
  EXPECT_EQ(wire::encode_ferol_header({8, 0, true, true, 1, 0x100'0000}, bytes),
            wire::FerolStatus::field_out_of_range);
  EXPECT_EQ(wire::encode_ferol_header({12, 0, true, true, 1, 0}, bytes),
            wire::FerolStatus::bad_length);
  // Reserved bits are ignored.
  ASSERT_EQ(wire::encode_ferol_header(in, bytes), wire::FerolStatus::ok);
  bytes[2] |= std::byte{0xf8};
  bytes[8] |= std::byte{0xff};
  bytes[12] |= std::byte{0xff};
  ASSERT_EQ(wire::decode_ferol_header(bytes, out), wire::FerolStatus::ok);
  EXPECT_EQ(out, in);
  EXPECT_EQ(wire::decode_ferol_header(std::span(bytes).first(15), out),
            wire::FerolStatus::too_short);
  EXPECT_EQ(wire::ferol_blocks(4080), 1u);
  EXPECT_EQ(wire::ferol_blocks(4088), 2u);
  EXPECT_EQ(wire::ferol_stream_size(8160), 8160u + 32u);
}

}  // namespace
}  // namespace daqflow::apps::fed
