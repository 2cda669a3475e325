#pragma once
// A RU's FED network input (`input: network`): one listening TCP socket per FED (FED i on
// port + i), each accepting one FED stream at a time: FEROL blocks (daqflow/wire/ferol.hpp) or
// frames (daqflow/apps/fed/fed_stream.hpp), by `framing`.
//
// One I/O thread (epoll) reads every FED's stream into staging chunks taken from that FED's own
// buffer pool and publishes each complete fragment, validated, into that FED's bounded SPSC
// ring. Memory is fixed at creation: when a FED's pool or ring is full the thread stops reading
// that FED, and TCP flow control throttles its sender. Chunks are filled so that a fragment
// never straddles two of them (near a chunk's end the thread reads only up to the end of the
// fragment it is in). Framed fragments are never moved; a fragment of several FEROL blocks is
// made contiguous in place (each block's data moved down over the headers before it).
//
// Validation of each fragment, the k-th on a FED's stream being event k: its FEROL blocks
// (signature, FED id, packet numbers 0, 1, ... in order, the first-block flag on the first only,
// the last-block flag ending the fragment, one event number on every block, equal to the FED
// header's L1 id, lengths) or its frame header (signature, FED id, event number k), the FED
// header (BOE, source id == the FED's id, L1 id ==
// k mod 2^24), the trailer (EOE, length == the framed length), the CRC when due
// (crc_check_every: 0 never, 1 always, N for events k with k % N == 0). A bad fragment is
// counted and reported as "FED 1203 event 5121: CRC mismatch (trailer 0x1a2b, computed
// 0x3c4d)"; on_error `fail` then sets failure() (produce() returns failed), `mark` flags the
// event kEventCorrupted and goes on. A stream that cannot be followed (a bad frame or FEROL
// block header, blocks out of order, a fragment above max_fragment_bytes, a connection closed
// within a fragment) always fails; a block's error names its FED, event and block number.
//
// produce(event, out) copies each FED's fragment of that event into out, in FED order: the one
// copy of the data between socket and RU chunk (counted in FragmentSourceStats::bytes). It
// returns not_ready until every FED's fragment has arrived.
//
// Threading: produce() from one thread (the RU's agent); stats(), failure() and stop() from any
// thread.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "daqflow/apps/fed/event_numbers.hpp"
#include "daqflow/apps/fed/fragment_source.hpp"
#include "daqflow/core/result.hpp"

namespace daqflow::apps::fed {

enum class OnFragmentError : std::uint8_t { fail, mark };

// How fragments are delimited on a FED's stream: in CMS FEROL blocks (daqflow/wire/ferol.hpp,
// what a FEROL and XDAQ's DummyFEROL send), or each behind one frame header
// (daqflow/apps/fed/fed_stream.hpp).
enum class FedFraming : std::uint8_t { ferol, frame };

struct NetworkInputSettings {
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;              // FED i listens on port + i
  std::vector<std::uint16_t> fed_ids;  // in FED order
  std::uint32_t crc_check_every = 1;
  OnFragmentError on_error = OnFragmentError::fail;
  FedFraming framing = FedFraming::ferol;
  EventNumbering numbering = EventNumbering::index;
  std::size_t max_fragment_bytes = 64 * 1024;
  std::size_t buffer_bytes_per_fed = 4u << 20;  // staging memory per FED
  std::string name = "network input";           // for messages: the RU's id
};

// Binds every FED's listening socket (the error names the FED, host and port) and starts the
// I/O thread. Senders may connect as soon as it returns.
[[nodiscard]] Result<std::unique_ptr<FragmentSource>> make_network_input(
    const NetworkInputSettings& settings);

}  // namespace daqflow::apps::fed
