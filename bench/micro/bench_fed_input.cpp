// The RU's FED network input over loopback TCP: one FED's stream of 2 kB or 16 kB fragments,
// built in memory beforehand (the sender only writes it to the socket), read, checked (CRC-16 of
// every fragment) and produced event by event; in one frame per fragment against CMS FEROL
// blocks. The figure is the input's rate in bytes of fragments per second.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <thread>
#include <vector>

#include "daqflow/apps/fed/fed_stream.hpp"
#include "daqflow/apps/fed/network_input.hpp"
#include "daqflow/wire/fed.hpp"
#include "daqflow/wire/ferol.hpp"
#include "micro_support.hpp"

namespace daqflow::micro {
namespace {

using namespace daqflow::apps::fed;  // NOLINT(google-build-using-namespace): benchmark file

constexpr std::uint16_t kFed = 700;
constexpr std::uint16_t kPort = 23790;

// The stream of `events` fragments of `size` bytes, framed or in FEROL blocks.
const std::vector<std::byte>& stream(FedFraming framing, std::size_t size, std::uint64_t events) {
  static std::map<std::pair<int, std::size_t>, std::vector<std::byte>> cache;
  auto& out = cache[{static_cast<int>(framing), size}];
  if (!out.empty()) return out;
  std::vector<std::byte> fragment(size);
  for (std::uint64_t e = 0; e < events; ++e) {
    wire::FedHeaderFields h;
    h.l1_id = wire::fed_l1_id(e);
    h.source_id = kFed;
    (void)wire::write_fragment(fragment, h, 1);
    if (framing == FedFraming::frame) {
      const std::size_t at = out.size();
      out.resize(at + kFedFrameHeaderSize + size);
      (void)encode_fed_frame({static_cast<std::uint32_t>(size / 8), kFed, e},
                             std::span(out).subspan(at).first<kFedFrameHeaderSize>());
      std::copy(fragment.begin(), fragment.end(),
                out.begin() + static_cast<std::ptrdiff_t>(at + kFedFrameHeaderSize));
      continue;
    }
    const std::size_t blocks = wire::ferol_blocks(size);
    for (std::size_t b = 0; b < blocks; ++b) {
      const std::size_t from = b * wire::kFerolMaxBlockData;
      const std::size_t length = std::min(wire::kFerolMaxBlockData, size - from);
      const std::size_t at = out.size();
      out.resize(at + wire::kFerolHeaderSize + length);
      (void)wire::encode_ferol_header(
          {static_cast<std::uint32_t>(length), static_cast<std::uint32_t>(b), b == 0,
           b + 1 == blocks, kFed, h.l1_id},
          std::span(out).subspan(at).first<wire::kFerolHeaderSize>());
      std::copy(fragment.begin() + static_cast<std::ptrdiff_t>(from),
                fragment.begin() + static_cast<std::ptrdiff_t>(from + length),
                out.begin() + static_cast<std::ptrdiff_t>(at + wire::kFerolHeaderSize));
    }
  }
  return out;
}

void send_all(const std::vector<std::byte>& data) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(kPort);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  while (::connect(fd, reinterpret_cast<const sockaddr*>(&sa), sizeof sa) != 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
}

void BM_FedNetworkInput(benchmark::State& state) {
  const auto framing = state.range(0) == 0 ? FedFraming::frame : FedFraming::ferol;
  const auto size = static_cast<std::size_t>(state.range(1));
  const std::uint64_t events = (64u << 20) / size;  // 64 MiB of fragments per iteration
  const std::vector<std::byte>& data = stream(framing, size, events);
  std::vector<std::byte> out(size);
  for (auto _ : state) {
    NetworkInputSettings s;
    s.port = kPort;
    s.fed_ids = {kFed};
    s.framing = framing;
    s.max_fragment_bytes = 65536;
    auto input = take(make_network_input(s), "network input");
    std::thread sender([&data] { send_all(data); });
    for (std::uint64_t e = 0; e < events;) {
      const Produced p = input->produce(e, out);
      if (p.status == Produced::Status::ready) {
        ++e;
      } else if (p.status == Produced::Status::failed) {
        state.SkipWithError(input->failure().c_str());
        break;
      }
    }
    sender.join();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * events * size));
  state.SetLabel(framing == FedFraming::frame ? "frame" : "ferol");
}
BENCHMARK(BM_FedNetworkInput)
    ->ArgNames({"ferol", "size"})
    ->Args({0, 2048})
    ->Args({1, 2048})
    ->Args({0, 16384})
    ->Args({1, 16384})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace daqflow::micro
