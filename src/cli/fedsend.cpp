// daqflow fedsend HOST:PORT --fed ID [--feds N] [--events N] [--size BYTES | --lognormal MEAN SD]
//   [--seed S] [--corrupt-crc EVENT]... [--rate HZ] [--file FILE] [--framing ferol|frame]
//   [--block-data BYTES] [--numbering index|cms] [--resync-after N]
//
// Plays FEDs for a RU's network input (`input: {kind: network}`): FED ID + i streams to PORT + i,
// one TCP connection and one thread per FED, each fragment cut into CMS FEROL blocks
// (daqflow/wire/ferol.hpp; --block-data bytes of fragment per block, 4080 as a FEROL fills
// them) or behind the frame header of daqflow/apps/fed/fed_stream.hpp. Fragments are made with the
// FED codec (wire::write_fragment: a per-FED, per-event payload pattern and a correct CRC), or
// replayed from a file of raw fragments (--file; each goes to the stream of its source id).
// --corrupt-crc flips the CRC of the first FED's fragment of that event, for testing the RU's
// checks.

#include <fmt/format.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cli/commands.hpp"
#include "daqflow/apps/fed/fed_stream.hpp"
#include "daqflow/control/client.hpp"
#include "daqflow/core/net.hpp"
#include "daqflow/wire/endian.hpp"
#include "daqflow/wire/fed.hpp"
#include "daqflow/wire/ferol.hpp"

namespace daqflow::cli {

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kSendBatchBytes = 256 * 1024;

struct FedsendArgs {
  std::string address;
  int fed = -1;
  int feds = 1;
  std::uint64_t events = 1000;
  std::size_t size = 2048;
  std::vector<double> lognormal;  // mean, sd
  std::size_t max_size = 65536;
  std::uint64_t seed = 1;
  std::vector<std::uint64_t> corrupt_crc;
  double rate = 0;  // events per second per FED; 0: as fast as the RU takes them
  std::string file;
  std::string framing = "ferol";
  std::size_t block_data = wire::kFerolMaxBlockData;
  std::string numbering = "index";
  std::uint64_t resync_after = 0;
  double connect_timeout_s = 10;
};

// One FED's stream: what to send and what was sent.
struct Stream {
  std::uint16_t id = 0;
  control::HostPort to;
  std::vector<std::span<const std::byte>> replay;  // --file: this FED's fragments, in order
  std::uint64_t fragments = 0;
  std::uint64_t bytes = 0;
  std::vector<std::uint64_t> corrupted;
  std::string error;
};

bool connected_to_itself(int fd) {
  sockaddr_storage local{};
  sockaddr_storage peer{};
  socklen_t local_len = sizeof local;
  socklen_t peer_len = sizeof peer;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_len) != 0 ||
      ::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0) {
    return false;
  }
  return local_len == peer_len && std::memcmp(&local, &peer, local_len) == 0;
}

core::UniqueFd connect_to(const control::HostPort& to, double timeout_s, std::string& error) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  for (;;) {
    addrinfo* found = nullptr;
    const int rc = ::getaddrinfo(to.host.c_str(), std::to_string(to.port).c_str(), &hints, &found);
    if (rc != 0) {
      error = fmt::format("cannot resolve {}: {}", to.host, ::gai_strerror(rc));
      return {};
    }
    core::UniqueFd fd;
    int last_errno = 0;
    for (addrinfo* a = found; a != nullptr && !fd; a = a->ai_next) {
      fd.reset(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
      if (fd && ::connect(fd.get(), a->ai_addr, a->ai_addrlen) != 0) {
        last_errno = errno;
        fd.reset();
      }
    }
    ::freeaddrinfo(found);
    if (fd && connected_to_itself(fd.get())) {
      // With nothing listening, a connect() whose ephemeral port happens to equal the target
      // port connects the socket to itself (TCP simultaneous open) and takes the RU's port.
      fd.reset();
      last_errno = ECONNREFUSED;
    }
    if (fd) return fd;
    // The RU may not be configured yet: keep trying until the timeout, not too often, since
    // every attempt takes an ephemeral port that a RU might be about to listen on.
    if (Clock::now() >= deadline) {
      error = fmt::format(
          "cannot connect to {}: {} (is the RU configured with input: {{kind: network, "
          "port: {}}}?)",
          to.str(), std::strerror(last_errno), to.port);
      return {};
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

bool send_all(int fd, std::span<const std::byte> bytes, std::string& error) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error = std::strerror(errno);
      return false;
    }
    done += static_cast<std::size_t>(n);
  }
  return true;
}

// The size of a generated fragment: fixed, or lognormal with the given mean and sd; whole
// 64-bit words within [16, max].
class Sizes {
 public:
  Sizes(const FedsendArgs& args, std::uint16_t fed)
      : args_(args), rng_(args.seed * 0x9e3779b97f4a7c15ULL + fed) {
    if (args.lognormal.size() == 2) {
      const double mean = args.lognormal[0];
      const double sd = args.lognormal[1];
      const double sigma2 = std::log1p(sd * sd / (mean * mean));
      dist_ = std::lognormal_distribution<double>(std::log(mean) - sigma2 / 2, std::sqrt(sigma2));
    }
  }
  std::size_t next() {
    const double raw = args_.lognormal.size() == 2 ? dist_(rng_) : static_cast<double>(args_.size);
    const auto words = static_cast<std::size_t>(std::ceil(raw / 8));
    return std::clamp<std::size_t>(words * 8, wire::kFedMinFragmentSize, args_.max_size / 8 * 8);
  }

 private:
  const FedsendArgs& args_;
  std::mt19937_64 rng_;
  std::lognormal_distribution<double> dist_;
};

// The L1 id of the e-th fragment: e mod 2^24, or CMS's count from 1 (wrapping at 2^24), back
// to 1 after the first --resync-after fragments.
std::uint32_t l1_id_of(std::uint64_t e, const FedsendArgs& args) {
  if (args.numbering != "cms") return wire::fed_l1_id(e);
  const std::uint64_t count =
      args.resync_after > 0 && e >= args.resync_after ? e - args.resync_after + 1 : e + 1;
  return wire::fed_l1_id(count);
}

void corrupt_crc(std::span<std::byte> fragment) {
  std::byte* trailer = fragment.data() + fragment.size() - wire::kFedTrailerSize;
  wire::store_le64(trailer, wire::load_le64(trailer) ^ wire::kFedTrailerCrcMask);
}

// Appends one fragment to `out` as the stream carries it: behind a frame header, or cut into
// FEROL blocks.
void append_framed(const FedsendArgs& args, std::uint16_t fed, std::uint64_t event,
                   std::span<const std::byte> fragment, std::vector<std::byte>& out) {
  const std::size_t at = out.size();
  if (args.framing == "frame") {
    out.resize(at + apps::fed::kFedFrameHeaderSize + fragment.size());
    (void)apps::fed::encode_fed_frame(
        {static_cast<std::uint32_t>(fragment.size() / 8), fed, event},
        std::span(out).subspan(at).first<apps::fed::kFedFrameHeaderSize>());
    std::copy(fragment.begin(), fragment.end(),
              out.begin() + static_cast<std::ptrdiff_t>(at + apps::fed::kFedFrameHeaderSize));
    return;
  }
  // FEROL blocks carry the FED header's L1 id as their event number.
  wire::FedHeaderFields header;
  (void)wire::decode_header(fragment, header);
  const std::size_t blocks = (fragment.size() + args.block_data - 1) / args.block_data;
  out.resize(at + fragment.size() + blocks * wire::kFerolHeaderSize);
  std::size_t to = at;
  for (std::size_t b = 0; b < blocks; ++b) {
    const std::size_t from = b * args.block_data;
    const std::size_t length = std::min(args.block_data, fragment.size() - from);
    wire::FerolHeader h;
    h.data_length = static_cast<std::uint32_t>(length);
    h.packet = static_cast<std::uint32_t>(b);
    h.first = b == 0;
    h.last = b + 1 == blocks;
    h.fed_id = fed;
    h.event = header.l1_id;
    (void)wire::encode_ferol_header(h, std::span(out).subspan(to).first<wire::kFerolHeaderSize>());
    to += wire::kFerolHeaderSize;
    std::memcpy(out.data() + to, fragment.data() + from, length);
    to += length;
  }
}

void send_stream(const FedsendArgs& args, Stream& s, std::uint16_t first_fed) {
  const core::UniqueFd fd = connect_to(s.to, args.connect_timeout_s, s.error);
  if (!fd) return;
  const bool replay = !args.file.empty();
  const std::uint64_t events = replay ? s.replay.size() : args.events;
  Sizes sizes(args, s.id);
  std::vector<std::byte> batch;
  batch.reserve(kSendBatchBytes + 3 * args.max_size);
  std::vector<std::byte> made(args.max_size);
  const auto start = Clock::now();
  for (std::uint64_t e = 0; e < events; ++e) {
    const std::size_t size = replay ? s.replay[e].size() : sizes.next();
    if (made.size() < size) made.resize(size);
    const auto fragment = std::span(made).first(size);
    if (replay) {
      std::copy(s.replay[e].begin(), s.replay[e].end(), fragment.begin());
    } else {
      wire::FedHeaderFields header;
      header.l1_id = l1_id_of(e, args);
      header.bx_id = static_cast<std::uint16_t>(e % 3564);
      header.source_id = s.id;
      (void)wire::write_fragment(fragment, header, args.seed);
    }
    if (s.id == first_fed &&
        std::find(args.corrupt_crc.begin(), args.corrupt_crc.end(), e) != args.corrupt_crc.end()) {
      corrupt_crc(fragment);
      s.corrupted.push_back(e);
    }
    append_framed(args, s.id, e, fragment, batch);
    const bool paced = args.rate > 0;
    if (batch.size() >= kSendBatchBytes || paced || e + 1 == events) {
      std::string why;
      if (!send_all(fd.get(), batch, why)) {
        s.error = fmt::format("sending to {} failed after {} fragments: {}", s.to.str(),
                              s.fragments, why);
        break;
      }
      s.fragments = e + 1;
      s.bytes += batch.size();
      batch.clear();
    }
    if (paced)
      std::this_thread::sleep_until(start + std::chrono::duration<double>((e + 1) / args.rate));
  }
}

// --file: the file's fragments (walked from its end, as a super-fragment), grouped by FED.
void load_replay(const FedsendArgs& args, std::vector<std::byte>& storage,
                 std::vector<Stream>& streams) {
  std::ifstream in(args.file, std::ios::binary);
  if (!in) fail("fedsend", fmt::format("--file {}: cannot read it", args.file));
  const std::vector<char> chars((std::istreambuf_iterator<char>(in)),
                                std::istreambuf_iterator<char>());
  storage.resize(chars.size());
  std::memcpy(storage.data(), chars.data(), chars.size());
  std::vector<wire::FedFragmentInfo> infos(storage.size() / wire::kFedMinFragmentSize + 1);
  wire::FedCheck lenient;  // replay as recorded: bad CRCs and odd bits are the point of a replay
  lenient.verify_crc = false;
  lenient.allow_reserved_bits = true;
  lenient.allow_receiver_errors = true;
  const wire::FedWalk walk = wire::walk_super_fragment(storage, infos, lenient);
  if (walk.status != wire::FedStatus::ok) {
    fail("fedsend", fmt::format("--file {}: not a sequence of FED fragments: {} at byte {}",
                                args.file, wire::to_string(walk.status), walk.error_offset));
  }
  for (std::size_t i = 0; i < walk.count; ++i) {
    const auto& f = infos[i];
    if (f.source_id < args.fed || f.source_id >= args.fed + args.feds) {
      fail("fedsend",
           fmt::format("--file {}: the fragment at byte {} is from FED {}, not one of FEDs {}..{} "
                       "(--fed, --feds)",
                       args.file, f.offset, f.source_id, args.fed, args.fed + args.feds - 1));
    }
    streams[static_cast<std::size_t>(f.source_id - args.fed)].replay.push_back(
        std::span<const std::byte>(storage).subspan(f.offset, f.size));
  }
}

void fedsend_command(const FedsendArgs& args) {
  auto address = control::parse_host_port(args.address);
  if (!address) fail("fedsend", address.error().message());
  if (args.fed < 0 || args.fed + args.feds - 1 > wire::kFedMaxSourceId) {
    fail("fedsend",
         fmt::format("--fed {} --feds {}: FED ids must be within 0..4095", args.fed, args.feds));
  }
  if (address->port + args.feds - 1 > 65535) fail("fedsend", "PORT + feds - 1 passes 65535");
  if (args.lognormal.size() == 2 && (args.lognormal[0] <= 0 || args.lognormal[1] < 0)) {
    fail("fedsend", "--lognormal MEAN SD: MEAN must be above 0 and SD at least 0");
  }
  if (args.max_size < wire::kFedMinFragmentSize) fail("fedsend", "--max-size must be at least 16");
  if (args.block_data % 8 != 0 || args.block_data < 8 ||
      args.block_data > wire::kFerolMaxBlockData) {
    fail("fedsend", fmt::format("--block-data {}: a multiple of 8 from 8 to {}", args.block_data,
                                wire::kFerolMaxBlockData));
  }

  std::vector<Stream> streams(static_cast<std::size_t>(args.feds));
  for (int i = 0; i < args.feds; ++i) {
    auto& s = streams[static_cast<std::size_t>(i)];
    s.id = static_cast<std::uint16_t>(args.fed + i);
    s.to = control::HostPort{address->host, static_cast<std::uint16_t>(address->port + i)};
  }
  std::vector<std::byte> storage;
  if (!args.file.empty()) load_replay(args, storage, streams);

  const auto start = Clock::now();
  std::vector<std::thread> threads;
  for (auto& s : streams) {
    threads.emplace_back(
        [&args, &s] { send_stream(args, s, static_cast<std::uint16_t>(args.fed)); });
  }
  for (auto& t : threads) t.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();

  std::uint64_t fragments = 0;
  std::uint64_t bytes = 0;
  bool failed = false;
  for (const auto& s : streams) {
    fragments += s.fragments;
    bytes += s.bytes;
    std::string corrupted;
    for (const auto e : s.corrupted)
      corrupted += (corrupted.empty() ? "" : ", ") + std::to_string(e);
    std::printf("FED %u -> %s: %llu fragments, %llu bytes%s%s\n", s.id, s.to.str().c_str(),
                static_cast<unsigned long long>(s.fragments),
                static_cast<unsigned long long>(s.bytes),
                s.fragments > 0 ? fmt::format(" (events 0..{})", s.fragments - 1).c_str() : "",
                corrupted.empty() ? "" : (", CRC corrupted in event(s) " + corrupted).c_str());
    if (!s.error.empty()) {
      std::fprintf(stderr, "daqflow fedsend: FED %u: %s\n", s.id, s.error.c_str());
      failed = true;
    }
  }
  std::printf("sent %llu fragments, %llu bytes from %d FED(s) in %.3f s (%.1f MB/s)\n",
              static_cast<unsigned long long>(fragments), static_cast<unsigned long long>(bytes),
              args.feds, seconds, seconds > 0 ? static_cast<double>(bytes) / seconds / 1e6 : 0.0);
  std::fflush(stdout);
  if (failed) throw CLI::RuntimeError(1);
}

}  // namespace

void add_fedsend(CLI::App& app) {
  auto args = std::make_shared<FedsendArgs>();
  auto* cmd = app.add_subcommand(
      "fedsend", "Send FED fragment streams to a RU's network input (one TCP connection per FED)");
  cmd->add_option("address", args->address, "the RU's host and input port, HOST:PORT")->required();
  cmd->add_option("--fed", args->fed, "source id of the (first) FED")->required();
  cmd->add_option("--feds", args->feds, "FEDs to send: --fed + i to PORT + i, one thread each")
      ->check(CLI::Range(1, 4096));
  auto* events =
      cmd->add_option("--events", args->events, "fragments per FED (events 0, 1, ...; 1000)");
  auto* size = cmd->add_option("--size", args->size, "fragment size in bytes (rounded up to 8)");
  auto* lognormal = cmd->add_option("--lognormal", args->lognormal,
                                    "fragment sizes drawn from a lognormal of this MEAN and SD")
                        ->expected(2);
  size->excludes(lognormal);
  cmd->add_option("--max-size", args->max_size, "largest fragment drawn (bytes)");
  cmd->add_option("--seed", args->seed, "seed of the payload pattern and the sizes");
  cmd->add_option("--corrupt-crc", args->corrupt_crc,
                  "flip the CRC of the first FED's fragment of this event (repeatable)");
  cmd->add_option("--rate", args->rate, "events per second per FED (0: as fast as taken)")
      ->check(CLI::NonNegativeNumber);
  auto* file = cmd->add_option("--file", args->file,
                               "replay the raw FED fragments of this file instead of generating");
  file->excludes(size)->excludes(lognormal)->excludes(events);
  cmd->add_option("--framing", args->framing,
                  "ferol: CMS FEROL blocks (as the RU's fed_framing default); frame: one 16-byte "
                  "frame header per fragment")
      ->check(CLI::IsMember({"ferol", "frame"}));
  cmd->add_option("--block-data", args->block_data,
                  "ferol: bytes of fragment per block (a multiple of 8 up to 4080; the last block "
                  "of a fragment carries the rest)");
  cmd->add_option("--numbering", args->numbering,
                  "L1 ids: index (fragment k carries k mod 2^24) or cms (from 1, wrapping at "
                  "2^24), as the EVM's event_numbers")
      ->check(CLI::IsMember({"index", "cms"}));
  cmd->add_option("--resync-after", args->resync_after,
                  "cms: after this many fragments the count restarts at 1 (a resync); 0: never");
  cmd->add_option("--connect-timeout", args->connect_timeout_s,
                  "seconds to keep trying to connect while the RU is not listening yet");
  cmd->callback([args] { fedsend_command(*args); });
}

}  // namespace daqflow::cli
