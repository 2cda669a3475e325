// Unidirectional ZeroMQ message rate the way libzmq's own local_thr/remote_thr measure it: a
// PUSH socket sends messages of one size as fast as zmq_send() takes them, a PULL socket receives
// them. The reference for daqflow's small-message figures over tcp (and over shm, as ZeroMQ's
// ipc): ZeroMQ batches small messages in its I/O thread, which is what FairMQ's zeromq transport
// rides on.
//
//   zmq_bw --receive ADDR --size N          PULL, binds ADDR, prints the result
//   zmq_bw --send ADDR --size N --duration S  PUSH, connects to ADDR
//
// ADDR is a ZeroMQ endpoint: tcp://127.0.0.1:PORT or ipc:///path. The sender sends for S seconds
// (from its first message), then one empty message that ends the measurement, and stays until the
// receiver hangs up: closing a socket waits (linger) only until its queue is empty, and libzmq
// drops the batch its I/O thread still holds for a full socket buffer, so a sender that closed at
// once lost its last hundred messages, the empty one with them, whenever the receiver was behind
// (2 to 3 runs in 100 on a loaded machine, the receiver then waited for ever). The receiver times
// from its first message to the empty one, checks the first and last byte of every message (as
// daqflow's stream sink does with --verify ends) and prints one JSON line: {"size", "messages",
// "seconds", "msg_s", "mb_s"} (MB = 10^6 bytes).

#include <zmq.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Options {
  std::string send;
  std::string receive;
  long size = 64;
  double duration_s = 2;
};

[[noreturn]] void usage(const char* what) {
  std::fprintf(stderr,
               "zmq_bw: %s\nusage: zmq_bw --receive ADDR --size N\n"
               "       zmq_bw --send ADDR --size N --duration S\n",
               what);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) usage(("missing value after " + arg).c_str());
    const char* value = argv[++i];
    char* end = nullptr;
    if (arg == "--send") {
      o.send = value;
    } else if (arg == "--receive") {
      o.receive = value;
    } else if (arg == "--size") {
      o.size = std::strtol(value, &end, 10);
      if (end == value || *end != '\0' || o.size < 1) usage("--size must be a positive integer");
    } else if (arg == "--duration") {
      o.duration_s = std::strtod(value, &end);
      if (end == value || *end != '\0' || o.duration_s <= 0) usage("--duration must be > 0");
    } else {
      usage(("unknown option " + arg).c_str());
    }
  }
  if (o.send.empty() == o.receive.empty()) usage("give one of --send and --receive");
  return o;
}

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "zmq_bw: %s: %s\n", what, zmq_strerror(zmq_errno()));
  std::exit(1);
}

constexpr unsigned char kFirst = 0xA5;
constexpr unsigned char kLast = 0x5A;

// Waits for the receiver to hang up, as the socket monitor on `events` reports it.
void wait_for_disconnect(void* events) {
  for (;;) {
    // A monitor event is two frames: the event number and value, then the peer's address.
    zmq_msg_t frame;
    zmq_msg_init(&frame);
    if (zmq_msg_recv(&frame, events, 0) < 0) {
      if (zmq_errno() == EAGAIN) {
        std::fprintf(stderr, "zmq_bw: the receiver did not hang up within 60 s of the end\n");
        std::exit(1);
      }
      fail("waiting for the receiver to hang up");
    }
    std::uint16_t event = 0;
    if (zmq_msg_size(&frame) >= sizeof event)
      std::memcpy(&event, zmq_msg_data(&frame), sizeof event);
    while (zmq_msg_more(&frame) != 0) {
      if (zmq_msg_recv(&frame, events, 0) < 0) fail("waiting for the receiver to hang up");
    }
    zmq_msg_close(&frame);
    if (event == ZMQ_EVENT_DISCONNECTED) return;
  }
}

int send(void* context, const Options& o) {
  void* socket = zmq_socket(context, ZMQ_PUSH);
  if (socket == nullptr) fail("zmq_socket");
  constexpr const char* kMonitor = "inproc://zmq_bw-monitor";
  if (zmq_socket_monitor(socket, kMonitor, ZMQ_EVENT_DISCONNECTED) != 0) fail("zmq_socket_monitor");
  void* events = zmq_socket(context, ZMQ_PAIR);
  if (events == nullptr) fail("zmq_socket (monitor)");
  // A receiver that never hangs up (gone without closing its connection) ends the wait too.
  const int wait_ms = 60000;
  if (zmq_setsockopt(events, ZMQ_RCVTIMEO, &wait_ms, sizeof wait_ms) != 0) fail("zmq_setsockopt");
  if (zmq_connect(events, kMonitor) != 0) fail("zmq_connect (monitor)");
  if (zmq_connect(socket, o.send.c_str()) != 0) fail("zmq_connect");
  std::vector<unsigned char> payload(static_cast<std::size_t>(o.size), 0);
  payload.front() = kFirst;
  payload.back() = kLast;
  using Clock = std::chrono::steady_clock;
  const auto duration = std::chrono::duration<double>(o.duration_s);
  Clock::time_point start;
  for (long sent = 0;; ++sent) {
    if (zmq_send(socket, payload.data(), payload.size(), 0) < 0) fail("zmq_send");
    // The first sends are queued before the receiver is there (up to the high-water mark): the
    // sender's clock only decides when to stop, the receiver's measures.
    if (sent == 0) start = Clock::now();
    if ((sent & 1023) == 1023 && Clock::now() - start >= duration) break;
  }
  if (zmq_send(socket, nullptr, 0, 0) < 0) fail("zmq_send (end)");
  wait_for_disconnect(events);
  zmq_close(events);
  zmq_close(socket);
  return 0;
}

int receive(void* context, const Options& o) {
  void* socket = zmq_socket(context, ZMQ_PULL);
  if (socket == nullptr) fail("zmq_socket");
  if (zmq_bind(socket, o.receive.c_str()) != 0) fail("zmq_bind");
  zmq_msg_t message;
  zmq_msg_init(&message);
  using Clock = std::chrono::steady_clock;
  Clock::time_point start;
  long messages = 0;
  long bad = 0;
  for (;;) {
    if (zmq_msg_recv(&message, socket, 0) < 0) fail("zmq_msg_recv");
    const std::size_t size = zmq_msg_size(&message);
    if (size == 0) break;
    if (messages == 0) start = Clock::now();
    const auto* data = static_cast<const unsigned char*>(zmq_msg_data(&message));
    if (size != static_cast<std::size_t>(o.size) || data[0] != kFirst || data[size - 1] != kLast) {
      ++bad;
    }
    ++messages;
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  zmq_msg_close(&message);
  zmq_close(socket);
  if (bad > 0) {
    std::fprintf(stderr, "zmq_bw: %ld of %ld messages had the wrong size or content\n", bad,
                 messages);
    return 1;
  }
  if (messages < 2 || seconds <= 0) {
    std::fprintf(stderr, "zmq_bw: too few messages (%ld) to measure a rate\n", messages);
    return 1;
  }
  // The first message starts the clock: the rate counts the ones after it.
  const double rate = static_cast<double>(messages - 1) / seconds;
  std::printf(
      "{\"size\": %ld, \"messages\": %ld, \"seconds\": %.6f, \"msg_s\": %.1f, \"mb_s\": %.3f}\n",
      o.size, messages, seconds, rate, rate * static_cast<double>(o.size) / 1e6);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  void* context = zmq_ctx_new();
  if (context == nullptr) fail("zmq_ctx_new");
  const int code = o.send.empty() ? receive(context, o) : send(context, o);
  zmq_ctx_term(context);
  return code;
}
