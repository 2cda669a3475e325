// The reference for the ofi transport's stream benchmark: raw libfabric bandwidth between two
// processes, in the manner of fabtests' fi_rdm_tagged_bw (Debian ships no fabtests; fi_pingpong
// measures round trips only). RDM endpoints, tagged messages, the provider chosen by argument.
//
//   fi_bw -s -p PROVIDER -S SIZE -W WINDOW -n ITERS [-P PORT]    server (receives)
//   fi_bw    -p PROVIDER -S SIZE -W WINDOW -n ITERS [-P PORT]    client (sends, reports)
//
// Both sides know each other's address without an exchange: tcp-based providers listen on
// 127.0.0.1:PORT (server) and PORT+1 (client); shm uses the region names fibw-PORT-s and
// fibw-PORT-c. A small message each way (tag 2) says both are ready; the server sends another
// once it has received every message, and the client's clock stops there.
//
// -m window (default, as fabtests): post WINDOW sends (receives), wait for all of them, repeat.
// -m sliding: keep WINDOW in flight, refilling each slot as it completes (how daqflow pipelines).
// -c sread (default): block in fi_cq_sread on the completion queue's wait object; providers
// without one (shm) fall back to yield. -c yield: fi_cq_read, sched_yield() when empty. -c spin.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>
#include <sched.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr std::uint64_t kTagData = 1;
constexpr std::uint64_t kTagSync = 2;

struct Options {
  std::string provider = "tcp;ofi_rxm";
  std::size_t size = 1u << 20;
  std::size_t window = 8;
  std::size_t iterations = 2000;
  std::size_t warmup = 0;  // 0: 2 windows
  int port = 14990;
  bool server = false;
  bool sliding = false;
  enum class Comp { sread, yield, spin } comp = Comp::sread;
};

[[noreturn]] void die(const char* what, long rc) {
  std::fprintf(stderr, "fi_bw: %s: %s\n", what, fi_strerror(static_cast<int>(rc < 0 ? -rc : rc)));
  std::exit(1);
}

void check(long rc, const char* what) {
  if (rc != 0) die(what, rc);
}

struct Fabric {
  fi_info* info = nullptr;
  fid_fabric* fabric = nullptr;
  fid_domain* domain = nullptr;
  fid_av* av = nullptr;
  fid_cq* cq = nullptr;
  fid_ep* ep = nullptr;
  fid_mr* mr = nullptr;
  void* desc = nullptr;
  std::vector<char> memory;  // sync buffers, then one message buffer per window slot
  bool sread = false;
  Options::Comp comp = Options::Comp::sread;
  fi_addr_t peer = FI_ADDR_UNSPEC;

  char* sync_send() { return memory.data(); }
  char* sync_recv() { return memory.data() + 64; }
  char* slot(std::size_t i, std::size_t size) { return memory.data() + 128 + i * size; }
};

std::string shm_name(int port, bool server) {
  return "fibw-" + std::to_string(port) + (server ? "-s" : "-c");
}

// The shm provider maps the peer's region when its address goes in, and a region that exists
// may still be being set up: the client waits for the server's (up long before), and the server
// inserts the client's only once the client has sent to it.
void insert_peer(Fabric& f, const Options& o) {
  if (o.provider == "shm") {
    const std::string peer = shm_name(o.port, !o.server);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (::access(("/dev/shm/" + peer).c_str(), F_OK) != 0) {
      if (std::chrono::steady_clock::now() > deadline) die("peer's shm region never appeared", 0);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (fi_av_insert(f.av, peer.c_str(), 1, &f.peer, 0, nullptr) != 1) die("fi_av_insert", 0);
  } else {
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<std::uint16_t>(o.port + (o.server ? 1 : 0)));
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fi_av_insert(f.av, &sa, 1, &f.peer, 0, nullptr) != 1) die("fi_av_insert", 0);
  }
}

void open_fabric(Fabric& f, const Options& o) {
  fi_info* hints = fi_allocinfo();
  hints->ep_attr->type = FI_EP_RDM;
  hints->caps = FI_TAGGED | FI_SEND | FI_RECV;
  hints->mode = FI_CONTEXT | FI_CONTEXT2;
  hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_ALLOCATED | FI_MR_VIRT_ADDR | FI_MR_PROV_KEY;
  hints->fabric_attr->prov_name = strdup(o.provider.c_str());
  const bool shm = o.provider == "shm";
  long rc = 0;
  if (shm) {
    const std::string name = shm_name(o.port, o.server);
    hints->addr_format = FI_ADDR_STR;
    hints->src_addr = strdup(name.c_str());
    hints->src_addrlen = name.size() + 1;
    rc = fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &f.info);
  } else {
    const std::string service = std::to_string(o.port + (o.server ? 0 : 1));
    hints->addr_format = FI_SOCKADDR_IN;
    rc = fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", service.c_str(), FI_SOURCE, hints, &f.info);
  }
  fi_freeinfo(hints);
  check(rc, "fi_getinfo");
  check(fi_fabric(f.info->fabric_attr, &f.fabric, nullptr), "fi_fabric");
  check(fi_domain(f.fabric, f.info, &f.domain, nullptr), "fi_domain");
  fi_av_attr av{};
  av.type = FI_AV_TABLE;
  av.count = 2;
  check(fi_av_open(f.domain, &av, &f.av, nullptr), "fi_av_open");
  fi_cq_attr cq{};
  cq.format = FI_CQ_FORMAT_TAGGED;
  cq.size = 2 * o.window + 16;
  cq.wait_obj = o.comp == Options::Comp::sread ? FI_WAIT_UNSPEC : FI_WAIT_NONE;
  f.comp = o.comp;
  if (fi_cq_open(f.domain, &cq, &f.cq, nullptr) != 0 && cq.wait_obj != FI_WAIT_NONE) {
    cq.wait_obj = FI_WAIT_NONE;
    f.comp = Options::Comp::yield;
    std::fprintf(stderr, "fi_bw: no wait object on this provider's queue: -c yield\n");
    check(fi_cq_open(f.domain, &cq, &f.cq, nullptr), "fi_cq_open");
  }
  check(fi_endpoint(f.domain, f.info, &f.ep, nullptr), "fi_endpoint");
  check(fi_ep_bind(f.ep, &f.av->fid, 0), "bind av");
  check(fi_ep_bind(f.ep, &f.cq->fid, FI_TRANSMIT | FI_RECV), "bind cq");
  check(fi_enable(f.ep), "fi_enable");

  f.memory.assign(128 + o.window * o.size, 'x');
  if ((f.info->domain_attr->mr_mode & FI_MR_LOCAL) != 0) {
    check(fi_mr_reg(f.domain, f.memory.data(), f.memory.size(), FI_SEND | FI_RECV, 0, 0, 0, &f.mr,
                    nullptr),
          "fi_mr_reg");
    f.desc = fi_mr_desc(f.mr);
  }

  // The shm server learns the client's address from its hello (see main).
  if (!(shm && o.server)) insert_peer(f, o);
}

// Endpoint before the queue and address vector it is bound to, memory before its domain.
void close_fabric(Fabric& f) {
  if (f.ep != nullptr) check(fi_close(&f.ep->fid), "close ep");
  if (f.cq != nullptr) check(fi_close(&f.cq->fid), "close cq");
  if (f.av != nullptr) check(fi_close(&f.av->fid), "close av");
  if (f.mr != nullptr) check(fi_close(&f.mr->fid), "close mr");
  if (f.domain != nullptr) check(fi_close(&f.domain->fid), "close domain");
  if (f.fabric != nullptr) check(fi_close(&f.fabric->fid), "close fabric");
  fi_freeinfo(f.info);
  f = Fabric{};
}

// Reads up to `max` completions (at least one), waiting as the completion method says. A failed
// operation ends the program; its context goes to `failed` when the caller wants to retry.
std::size_t read_cq(Fabric& f, fi_cq_tagged_entry* out, std::size_t max, void** failed = nullptr) {
  for (;;) {
    ssize_t n = 0;
    if (f.comp == Options::Comp::sread) {
      n = fi_cq_sread(f.cq, out, max, nullptr, 100);
    } else {
      n = fi_cq_read(f.cq, out, max);
      if (n == -FI_EAGAIN && f.comp == Options::Comp::yield) sched_yield();
    }
    if (n > 0) return static_cast<std::size_t>(n);
    if (n == -FI_EAVAIL) {
      fi_cq_err_entry err{};
      (void)fi_cq_readerr(f.cq, &err, 0);
      if (failed != nullptr) {
        *failed = err.op_context;
        return 0;
      }
      die("completion error", err.err);
    }
    if (n != -FI_EAGAIN) die("fi_cq_read", n);
  }
}

void post_send(Fabric& f, const char* buf, std::size_t len, std::uint64_t tag, void* ctx) {
  for (;;) {
    const ssize_t rc = fi_tsend(f.ep, buf, len, f.desc, f.peer, tag, ctx);
    if (rc == 0) return;
    if (rc != -FI_EAGAIN) die("fi_tsend", rc);
    (void)fi_cq_read(f.cq, nullptr, 0);  // progress
  }
}

void post_recv(Fabric& f, char* buf, std::size_t len, std::uint64_t tag, void* ctx) {
  for (;;) {
    const ssize_t rc = fi_trecv(f.ep, buf, len, f.desc, FI_ADDR_UNSPEC, tag, 0, ctx);
    if (rc == 0) return;
    if (rc != -FI_EAGAIN) die("fi_trecv", rc);
    (void)fi_cq_read(f.cq, nullptr, 0);
  }
}

// Waits for `count` completions of the data stream (sync messages do not overlap with it).
void wait_for(Fabric& f, std::size_t count) {
  fi_cq_tagged_entry e[16];
  while (count > 0) count -= read_cq(f, e, count < 16 ? count : 16);
}

// The client's first message may reach a server that is not up yet: retry until one goes out.
void client_hello(Fabric& f) {
  fi_context2 ctx{};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (;;) {
    post_send(f, f.sync_send(), 4, kTagSync, &ctx);
    fi_cq_tagged_entry e;
    void* failed = nullptr;
    if (read_cq(f, &e, 1, &failed) == 1) return;
    if (std::chrono::steady_clock::now() > deadline) die("the server never answered", 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

void sync_recv(Fabric& f) {
  fi_context2 ctx{};
  post_recv(f, f.sync_recv(), 64, kTagSync, &ctx);
  wait_for(f, 1);
}

void sync_send(Fabric& f) {
  fi_context2 ctx{};
  post_send(f, f.sync_send(), 4, kTagSync, &ctx);
  wait_for(f, 1);
}

// Moves `total` messages; returns when the last one completed locally.
void transfer(Fabric& f, const Options& o, std::size_t total, bool send) {
  std::vector<fi_context2> ctx(o.window);
  auto post = [&](std::size_t i) {
    const std::size_t k = i % o.window;
    if (send) {
      post_send(f, f.slot(k, o.size), o.size, kTagData, &ctx[k]);
    } else {
      post_recv(f, f.slot(k, o.size), o.size, kTagData, &ctx[k]);
    }
  };
  if (!o.sliding) {
    for (std::size_t i = 0, j = 0; i < total; ++i) {
      post(i);
      if (++j == o.window || i + 1 == total) {
        wait_for(f, j);
        j = 0;
      }
    }
    return;
  }
  std::size_t posted = 0;
  std::size_t done = 0;
  fi_cq_tagged_entry e[16];
  while (posted < total && posted < o.window) post(posted++);
  while (done < total) {
    const std::size_t n = read_cq(f, e, 16);
    for (std::size_t k = 0; k < n; ++k) {
      ++done;
      // Refill the slot that completed (receives may complete out of order).
      if (posted < total) {
        post(static_cast<std::size_t>(static_cast<fi_context2*>(e[k].op_context) - ctx.data()));
        ++posted;
      }
    }
  }
}

void usage() {
  std::fprintf(stderr,
               "usage: fi_bw [-s] [-p PROVIDER] [-S SIZE] [-W WINDOW] [-n ITERS] [-w WARMUP] "
               "[-P PORT] [-m window|sliding] [-c sread|yield|spin]\n");
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  int c = 0;
  while ((c = getopt(argc, argv, "sp:S:W:n:w:P:m:c:h")) != -1) {
    switch (c) {
      case 's':
        o.server = true;
        break;
      case 'p':
        o.provider = optarg;
        break;
      case 'S':
        o.size = std::strtoull(optarg, nullptr, 10);
        break;
      case 'W':
        o.window = std::strtoull(optarg, nullptr, 10);
        break;
      case 'n':
        o.iterations = std::strtoull(optarg, nullptr, 10);
        break;
      case 'w':
        o.warmup = std::strtoull(optarg, nullptr, 10);
        break;
      case 'P':
        o.port = std::atoi(optarg);
        break;
      case 'm':
        if (std::strcmp(optarg, "window") != 0 && std::strcmp(optarg, "sliding") != 0) usage();
        o.sliding = std::strcmp(optarg, "sliding") == 0;
        break;
      case 'c':
        if (std::strcmp(optarg, "sread") == 0) {
          o.comp = Options::Comp::sread;
        } else if (std::strcmp(optarg, "yield") == 0) {
          o.comp = Options::Comp::yield;
        } else if (std::strcmp(optarg, "spin") == 0) {
          o.comp = Options::Comp::spin;
        } else {
          usage();
        }
        break;
      default:
        usage();
    }
  }
  if (o.size == 0 || o.window == 0 || o.iterations == 0) usage();
  if (o.warmup == 0) o.warmup = 2 * o.window;
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  Fabric f;
  open_fabric(f, o);
  if (o.server) {
    sync_recv(f);  // the client is up
    if (o.provider == "shm") insert_peer(f, o);
    sync_send(f);  // so are we
    transfer(f, o, o.warmup, false);
    transfer(f, o, o.iterations, false);
    sync_send(f);  // everything arrived
  } else {
    client_hello(f);
    sync_recv(f);
    transfer(f, o, o.warmup, true);
    const auto start = std::chrono::steady_clock::now();
    transfer(f, o, o.iterations, true);
    sync_recv(f);
    const double dt =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double bytes = static_cast<double>(o.size) * static_cast<double>(o.iterations);
    std::printf(
        "{\"provider\": \"%s\", \"message_bytes\": %zu, \"window\": %zu, \"iterations\": %zu, "
        "\"mode\": \"%s\", \"completion\": \"%s\", \"seconds\": %.3f, \"mb_s\": %.1f, "
        "\"mib_per_s\": %.1f, "
        "\"gbit_per_s\": %.3f}\n",
        o.provider.c_str(), o.size, o.window, o.iterations, o.sliding ? "sliding" : "window",
        f.comp == Options::Comp::sread   ? "sread"
        : f.comp == Options::Comp::yield ? "yield"
                                         : "spin",
        dt, bytes / dt / 1e6, bytes / dt / (1 << 20), bytes * 8 / dt / 1e9);
  }
  close_fabric(f);
  return 0;
}
