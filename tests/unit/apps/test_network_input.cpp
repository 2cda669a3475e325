// The RU's FED network input, fed through real TCP sockets on 127.0.0.1 (ports 23400-23599):
// good streams, CRC errors, events out of sequence, truncated streams, marking and back-pressure.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <regex>
#include <thread>

#include "daqflow/apps/evb/fed_stream.hpp"
#include "daqflow/apps/evb/network_input.hpp"
#include "daqflow/wire/endian.hpp"
#include "daqflow/wire/evb.hpp"
#include "daqflow/wire/fed.hpp"
#include "test_event_file_support.hpp"

namespace daqflow::apps::evb {
namespace {

using namespace std::chrono_literals;
using testing::make_fragment;

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

NetworkInputSettings settings(std::uint16_t port, std::uint16_t first_fed, std::size_t feds) {
  NetworkInputSettings s;
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
            "FED 740 event 2: event number out of sequence (the frame header says event 3)");
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

}  // namespace
}  // namespace daqflow::apps::evb
