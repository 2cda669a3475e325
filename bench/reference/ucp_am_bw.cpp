// UCP active-message bandwidth with the ucx transport's choices switched on one at a time: the
// program behind "What the gap is made of" in docs/transports.md (ucx over tcp, 1 MiB, against
// ucx_perftest). With no option it moves data as `ucx_perftest -t ucp_am_bw` does: endpoints made
// from worker addresses without error handling, one send buffer and one receive buffer that
// nothing writes (anonymous memory still backed by the kernel's zero page), the receive started
// inside the active-message callback. Each option turns one of those into what daqflow does:
//
//   --cm         connect through UCX's socket-address connection manager (a listener)
//   --peer       error-handling mode PEER on both endpoints
//   --header N   an active-message header of N bytes (daqflow's wire header: 40)
//   --buffers N  cycle through N send buffers and N receive buffers instead of one of each
//   --written    write every buffer once before the run and the first and last byte of each
//                message (as the stream source and sink do with --verify ends)
//   --defer      start the receive after ucp_worker_progress() returns, not in the callback
//   --memh       pass the buffers' memory handles with each send and receive
//
//   ucp_am_bw --receive PORT [options]           receiver: listens (or exchanges addresses) on PORT
//   ucp_am_bw --send HOST:PORT [options]          sender: measures and prints the result
//
// Both sides need the same options. The sender sends one small message and waits for it before
// the clock starts, so that connection set-up is not measured, then --count messages of --size
// bytes with at most --depth in flight, timed until the last send completes, and prints one JSON
// line: {"size", "messages", "seconds", "mb_s"} (MB = 10^6 bytes). UCX_TLS picks the transports.
// bench/studies/ucx-am-features runs the combinations over tcp, shuffled, and compares them;
// `daqflow bench compare --reference ucp_am_bw` runs it with daqflow's choices (--cm --header 40
// --written, --peer with --reference-err-handling, --buffers from --reference-buffers).

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr unsigned kAmId = 7;

struct Options {
  bool receiver = false;
  std::string host = "127.0.0.1";
  int port = 0;
  std::size_t size = std::size_t{1} << 20;
  long count = 6000;
  long depth = 4;
  std::size_t header = 0;
  int buffers = 1;
  bool cm = false, peer = false, written = false, defer = false, memh = false;
};

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "ucp_am_bw: %s\n", what.c_str());
  std::exit(1);
}

void check(ucs_status_t status, const char* what) {
  if (status != UCS_OK) fail(std::string(what) + ": " + ucs_status_string(status));
}

long number(const char* text, const std::string& option) {
  char* end = nullptr;
  const long v = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || v < 0) fail(option + " needs a number, not '" + text + "'");
  return v;
}

Options parse(int argc, char** argv) {
  Options o;
  bool sender = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) fail("missing value after " + arg);
      return argv[++i];
    };
    if (arg == "--receive") {
      o.receiver = true;
      o.port = static_cast<int>(number(value(), arg));
    } else if (arg == "--send") {
      sender = true;
      const std::string where = value();
      const auto colon = where.rfind(':');
      if (colon == std::string::npos) fail("--send needs HOST:PORT");
      o.host = where.substr(0, colon);
      o.port = static_cast<int>(number(where.c_str() + colon + 1, arg));
    } else if (arg == "--size") {
      o.size = static_cast<std::size_t>(number(value(), arg));
    } else if (arg == "--count") {
      o.count = number(value(), arg);
    } else if (arg == "--depth") {
      o.depth = number(value(), arg);
    } else if (arg == "--header") {
      o.header = static_cast<std::size_t>(number(value(), arg));
    } else if (arg == "--buffers") {
      o.buffers = static_cast<int>(number(value(), arg));
    } else if (arg == "--cm") {
      o.cm = true;
    } else if (arg == "--peer") {
      o.peer = true;
    } else if (arg == "--written") {
      o.written = true;
    } else if (arg == "--defer") {
      o.defer = true;
    } else if (arg == "--memh") {
      o.memh = true;
    } else {
      fail("unknown option " + arg);
    }
  }
  if (o.receiver == sender) fail("one of --receive PORT and --send HOST:PORT");
  if (o.size < 2 || o.count < 1 || o.depth < 1 || o.buffers < 1)
    fail("bad --size/--count/--depth/--buffers");
  return o;
}

// One side's UCP state. Single-threaded: everything happens in the loop of main().
struct Side {
  Options o;
  ucp_context_h context = nullptr;
  ucp_worker_h worker = nullptr;
  ucp_ep_h ep = nullptr;
  ucp_listener_h listener = nullptr;
  std::byte* send_base = nullptr;
  std::byte* recv_base = nullptr;
  ucp_mem_h send_memh = nullptr;
  ucp_mem_h recv_memh = nullptr;
  long next_buffer = 0;
  long received = 0;
  // --written: the first and last byte of each received message, summed, as the sink's
  // --verify ends reads them (a buffer at a time, in turn).
  unsigned ends_seen = 0;
  std::vector<void*> deferred;  // rendezvous descriptors not yet received (--defer)

  std::byte* map(ucp_mem_h& memh) {
    const std::size_t bytes = o.size * static_cast<std::size_t>(o.buffers);
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) fail("cannot map buffers");
    if (o.written) std::memset(p, 0x5a, bytes);
    ucp_mem_map_params_t params{};
    params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    params.address = p;
    params.length = bytes;
    check(ucp_mem_map(context, &params, &memh), "ucp_mem_map");
    return static_cast<std::byte*>(p);
  }

  std::byte* buffer(std::byte* base) {
    std::byte* b = base + static_cast<std::size_t>(next_buffer % o.buffers) * o.size;
    ++next_buffer;
    return b;
  }

  // The endpoint parameters every endpoint gets: the error mode and, for mode PEER, a handler
  // (the peer going away at the end of the run is not an error; a send that fails is, below).
  void set_error_handling(ucp_ep_params_t& params) const {
    params.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    params.err_mode = o.peer ? UCP_ERR_HANDLING_MODE_PEER : UCP_ERR_HANDLING_MODE_NONE;
    if (o.peer) {
      params.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLER;
      params.err_handler.cb = [](void*, ucp_ep_h, ucs_status_t) {};
      params.err_handler.arg = nullptr;
    }
  }

  void receive(void* descriptor) {
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.recv_am = [](void* request, ucs_status_t status, std::size_t, void* self) {
      if (status != UCS_OK) fail(std::string("receive: ") + ucs_status_string(status));
      static_cast<Side*>(self)->delivered();
      ucp_request_free(request);
    };
    param.user_data = this;
    if (o.memh) {
      param.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMH;
      param.memh = recv_memh;
    }
    std::byte* into = buffer(recv_base);
    void* request = ucp_am_recv_data_nbx(worker, descriptor, into, o.size, &param);
    if (UCS_PTR_IS_ERR(request)) {
      fail(std::string("receive: ") + ucs_status_string(UCS_PTR_STATUS(request)));
    }
    if (request == nullptr) delivered();
  }

  void delivered() {
    ++received;
    if (o.written) {
      const std::byte* b =
          recv_base + static_cast<std::size_t>((received - 1) % o.buffers) * o.size;
      ends_seen += static_cast<unsigned>(b[0]) + static_cast<unsigned>(b[o.size - 1]);
    }
  }
};

ucs_status_t on_message(void* arg, const void*, std::size_t, void* data, std::size_t length,
                        const ucp_am_recv_param_t* param) {
  auto* side = static_cast<Side*>(arg);
  if ((param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) == 0) {  // the warm-up message
    if (length > 0) std::memcpy(side->recv_base, data, length);
    ++side->received;
    return UCS_OK;
  }
  if (side->o.defer) {
    side->deferred.push_back(data);
  } else {
    side->receive(data);
  }
  return UCS_INPROGRESS;
}

sockaddr_in address_of(const std::string& host, int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  if (host.empty()) {
    a.sin_addr.s_addr = htonl(INADDR_ANY);
  } else if (::inet_pton(AF_INET, host.c_str(), &a.sin_addr) != 1) {
    fail("'" + host + "' is not an IPv4 address");
  }
  return a;
}

// Worker addresses go over a plain TCP connection, as ucx_perftest exchanges them.
void exchange_addresses(Side& s) {
  int fd = -1;
  if (s.o.receiver) {
    const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
    const int one = 1;
    ::setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    const sockaddr_in a = address_of("", s.o.port);
    if (::bind(listener, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0 ||
        ::listen(listener, 1) != 0) {
      fail("cannot listen on port " + std::to_string(s.o.port));
    }
    fd = ::accept(listener, nullptr, nullptr);
    ::close(listener);
  } else {
    const sockaddr_in a = address_of(s.o.host, s.o.port);
    for (int attempt = 0; fd < 0; ++attempt) {
      fd = ::socket(AF_INET, SOCK_STREAM, 0);
      if (::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0) break;
      ::close(fd);
      fd = -1;
      if (attempt == 500) fail("no receiver at " + s.o.host + ":" + std::to_string(s.o.port));
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  ucp_address_t* mine = nullptr;
  std::size_t length = 0;
  check(ucp_worker_get_address(s.worker, &mine, &length), "ucp_worker_get_address");
  const std::uint64_t n = length;
  if (::write(fd, &n, sizeof n) != sizeof n ||
      ::write(fd, mine, length) != static_cast<ssize_t>(length)) {
    fail("cannot send the worker address");
  }
  ucp_worker_release_address(s.worker, mine);
  std::uint64_t theirs_length = 0;
  if (::recv(fd, &theirs_length, sizeof theirs_length, MSG_WAITALL) != sizeof theirs_length) {
    fail("no worker address from the peer");
  }
  std::vector<char> theirs(theirs_length);
  if (::recv(fd, theirs.data(), theirs.size(), MSG_WAITALL) !=
      static_cast<ssize_t>(theirs.size())) {
    fail("short worker address from the peer");
  }
  ::close(fd);
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
  params.address = reinterpret_cast<const ucp_address_t*>(theirs.data());
  s.set_error_handling(params);
  check(ucp_ep_create(s.worker, &params, &s.ep), "ucp_ep_create (worker address)");
}

void connect_through_cm(Side& s) {
  if (s.o.receiver) {
    sockaddr_in a = address_of("", s.o.port);
    ucp_listener_params_t params{};
    params.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
    params.sockaddr.addr = reinterpret_cast<const sockaddr*>(&a);
    params.sockaddr.addrlen = sizeof a;
    params.conn_handler.arg = &s;
    params.conn_handler.cb = [](ucp_conn_request_h request, void* arg) {
      auto* side = static_cast<Side*>(arg);
      ucp_ep_params_t ep_params{};
      ep_params.field_mask = UCP_EP_PARAM_FIELD_CONN_REQUEST;
      ep_params.conn_request = request;
      side->set_error_handling(ep_params);
      check(ucp_ep_create(side->worker, &ep_params, &side->ep), "ucp_ep_create (request)");
    };
    check(ucp_listener_create(s.worker, &params, &s.listener), "ucp_listener_create");
    return;
  }
  sockaddr_in a = address_of(s.o.host, s.o.port);
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR;
  params.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
  params.sockaddr.addr = reinterpret_cast<const sockaddr*>(&a);
  params.sockaddr.addrlen = sizeof a;
  s.set_error_handling(params);
  check(ucp_ep_create(s.worker, &params, &s.ep), "ucp_ep_create (socket address)");
}

struct Sent {
  long done = 0;
  bool failed = false;
};

// Posts one send; false if UCX refused it at once (the endpoint has failed).
bool send(Side& s, const void* header, const void* data, std::size_t length, Sent& sent) {
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  param.cb.send = [](void* request, ucs_status_t status, void* user) {
    auto* out = static_cast<Sent*>(user);
    ++out->done;
    out->failed = out->failed || status != UCS_OK;
    ucp_request_free(request);
  };
  param.user_data = &sent;
  if (s.o.memh) {
    param.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMH;
    param.memh = s.send_memh;
  }
  void* request = ucp_am_send_nbx(s.ep, kAmId, header, s.o.header, data, length, &param);
  if (UCS_PTR_IS_ERR(request)) return false;
  if (request == nullptr) ++sent.done;
  return true;
}

// The first message, small, and its completion. Through the connection manager the sender may
// start before the receiver listens: the endpoint then fails and is made again (for up to 10 s).
void warm_up(Side& s, const void* header) {
  for (int attempt = 0;; ++attempt) {
    Sent warm;
    if (send(s, header, s.send_base, 8, warm)) {
      while (warm.done == 0) ucp_worker_progress(s.worker);
      if (!warm.failed) return;
    }
    if (!s.o.cm || attempt == 500) fail("the first message failed: is the receiver there?");
    ucp_request_param_t close{};
    close.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    close.flags = UCP_EP_CLOSE_FLAG_FORCE;
    void* request = ucp_ep_close_nbx(s.ep, &close);
    if (UCS_PTR_IS_PTR(request)) {
      while (ucp_request_check_status(request) == UCS_INPROGRESS) ucp_worker_progress(s.worker);
      ucp_request_free(request);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    connect_through_cm(s);
  }
}

// A line on standard error every 5 s while a run lasts (checked every 4096 turns of the loop), so
// that a run stopped from outside for taking too long shows whether it crawled or stalled.
class Progress {
 public:
  explicit Progress(const char* what) : what_(what) {}
  void tick(long done, long total) {
    if ((++turns_ & 4095) != 0) return;
    const auto now = std::chrono::steady_clock::now();
    if (now < next_) return;
    next_ = now + std::chrono::seconds(5);
    const double s = std::chrono::duration<double>(now - start_).count();
    std::fprintf(stderr, "ucp_am_bw: %.0f s: %s %ld of %ld\n", s, what_, done, total);
  }

 private:
  const char* what_;
  std::uint64_t turns_ = 0;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point next_ = start_ + std::chrono::seconds(5);
};

}  // namespace

int main(int argc, char** argv) {
  Side s;
  s.o = parse(argc, argv);
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_AM;
  // The listener takes its port back while connections of the previous run on it (the
  // reference runs before and after daqflow's, on one port) linger in TIME_WAIT, as daqflow's ucx
  // transport does.
  ucp_config_t* config = nullptr;
  check(ucp_config_read(nullptr, nullptr, &config), "ucp_config_read");
  check(ucp_config_modify(config, "CM_REUSEADDR", "y"), "ucp_config_modify CM_REUSEADDR");
  check(ucp_init(&params, config, &s.context), "ucp_init");
  ucp_config_release(config);
  ucp_worker_params_t worker_params{};
  worker_params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  worker_params.thread_mode = UCS_THREAD_MODE_SINGLE;
  check(ucp_worker_create(s.context, &worker_params, &s.worker), "ucp_worker_create");
  ucp_am_handler_param_t handler{};
  handler.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_FLAGS |
                       UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG;
  handler.id = kAmId;
  handler.flags = UCP_AM_FLAG_WHOLE_MSG | UCP_AM_FLAG_PERSISTENT_DATA;
  handler.cb = on_message;
  handler.arg = &s;
  check(ucp_worker_set_am_recv_handler(s.worker, &handler), "ucp_worker_set_am_recv_handler");
  s.send_base = s.map(s.send_memh);
  s.recv_base = s.map(s.recv_memh);
  if (s.o.cm) {
    connect_through_cm(s);
  } else {
    exchange_addresses(s);
  }

  if (s.o.receiver) {
    Progress progress("received");
    while (s.received < s.o.count + 1) {  // the warm-up message and the run
      progress.tick(s.received, s.o.count + 1);
      ucp_worker_progress(s.worker);
      for (void* d : s.deferred) s.receive(d);
      s.deferred.clear();
    }
    // Progress a little longer, so that the sender's last completions arrive.
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
    while (std::chrono::steady_clock::now() < until) ucp_worker_progress(s.worker);
    return 0;
  }

  const std::vector<std::byte> header(std::max<std::size_t>(s.o.header, 1), std::byte{1});
  warm_up(s, header.data());
  Sent sent;
  long posted = 0;
  const auto start = std::chrono::steady_clock::now();
  Progress progress("sent and completed");
  while (sent.done < s.o.count) {
    progress.tick(sent.done, s.o.count);
    while (posted < s.o.count && posted - sent.done < s.o.depth) {
      std::byte* b = s.buffer(s.send_base);
      if (s.o.written) {  // the stream source's --verify ends writes both ends
        b[0] = static_cast<std::byte>(posted);
        b[s.o.size - 1] = static_cast<std::byte>(posted);
      }
      if (!send(s, header.data(), b, s.o.size, sent)) fail("a send failed");
      ++posted;
    }
    ucp_worker_progress(s.worker);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (sent.failed) fail("a send failed");
  const double bytes = static_cast<double>(s.o.count) * static_cast<double>(s.o.size);
  std::printf("{\"size\": %zu, \"messages\": %ld, \"seconds\": %.6f, \"mb_s\": %.3f}\n", s.o.size,
              s.o.count, seconds, bytes / seconds / 1e6);
  return 0;
}
