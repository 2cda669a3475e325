// Unidirectional MPI bandwidth the way osu_bw measures it: rank 0 posts a window of nonblocking
// sends, waits for all of them, and rank 1 acknowledges each window with a 4-byte message once
// its receives completed. The reference for the mpi transport's stream figures: run it with the
// same mpirun settings as the daqflow run it is compared with.
//
//   mpirun -np 2 bin/mpi_bw [--size N | --min N --max N] [--window 64] [--iterations N]
//                           [--warmup N] [--issend] [--buffers B]
//
// Like osu_bw, every send of a window reads the same buffer and every receive writes the same
// buffer (--buffers 1), so that on one host both stay in the copying core's cache. --buffers B
// cycles through B distinct buffers on each side instead, as a pipeline of B different messages
// in flight has to.
//
// Prints one line per size: the size in bytes and the bandwidth in MB/s (10^6 bytes per second).

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Options {
  long min_size = 1;
  long max_size = 4L << 20;
  int window = 64;
  int iterations = 0;  // 0: about 1 GiB per size, at least 20 windows
  int warmup = 0;      // 0: a tenth of the iterations, at least 2
  bool issend = false;
  int buffers = 1;  // distinct buffers per side; message w of a window uses buffer w % buffers
};

[[noreturn]] void usage(const char* what) {
  std::fprintf(stderr,
               "mpi_bw: %s\nusage: mpirun -np 2 mpi_bw [--size N | --min N --max N] "
               "[--window W] [--iterations N] [--warmup N] [--issend] [--buffers B]\n",
               what);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> long {
      if (i + 1 >= argc) usage(("missing value after " + arg).c_str());
      char* end = nullptr;
      const long v = std::strtol(argv[++i], &end, 10);
      if (end == argv[i] || *end != '\0' || v < 0) usage(("bad value for " + arg).c_str());
      return v;
    };
    if (arg == "--size") {
      o.min_size = o.max_size = value();
    } else if (arg == "--min") {
      o.min_size = value();
    } else if (arg == "--max") {
      o.max_size = value();
    } else if (arg == "--window") {
      o.window = static_cast<int>(value());
    } else if (arg == "--iterations") {
      o.iterations = static_cast<int>(value());
    } else if (arg == "--warmup") {
      o.warmup = static_cast<int>(value());
    } else if (arg == "--buffers") {
      o.buffers = static_cast<int>(value());
    } else if (arg == "--issend") {
      o.issend = true;
    } else {
      usage(("unknown option " + arg).c_str());
    }
  }
  if (o.window < 1 || o.min_size > o.max_size) usage("need window >= 1 and min <= max");
  if (o.buffers < 1 || o.buffers > o.window) usage("need 1 <= buffers <= window");
  return o;
}

// One size: returns MB/s on rank 0 (0 elsewhere).
double measure(const Options& o, long size, int rank, std::vector<char>& buffers) {
  const long per_window = size * o.window;
  int iterations = o.iterations;
  if (iterations == 0) {
    iterations = static_cast<int>(std::clamp((1L << 30) / std::max(per_window, 1L), 20L, 10000L));
  }
  const int warmup = o.warmup > 0 ? o.warmup : std::max(2, iterations / 10);
  std::vector<MPI_Request> requests(o.window);
  const int count = static_cast<int>(size);
  auto buffer = [&](int w) {
    return buffers.data() + static_cast<std::size_t>(w % o.buffers) * size;
  };
  char ack[4] = {};
  double start = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  for (int i = 0; i < warmup + iterations; ++i) {
    if (i == warmup) start = MPI_Wtime();
    if (rank == 0) {
      for (int w = 0; w < o.window; ++w) {
        if (o.issend) {
          MPI_Issend(buffer(w), count, MPI_CHAR, 1, 100, MPI_COMM_WORLD, &requests[w]);
        } else {
          MPI_Isend(buffer(w), count, MPI_CHAR, 1, 100, MPI_COMM_WORLD, &requests[w]);
        }
      }
      MPI_Waitall(o.window, requests.data(), MPI_STATUSES_IGNORE);
      MPI_Recv(ack, 4, MPI_CHAR, 1, 101, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
      for (int w = 0; w < o.window; ++w) {
        MPI_Irecv(buffer(w), count, MPI_CHAR, 0, 100, MPI_COMM_WORLD, &requests[w]);
      }
      MPI_Waitall(o.window, requests.data(), MPI_STATUSES_IGNORE);
      MPI_Send(ack, 4, MPI_CHAR, 0, 101, MPI_COMM_WORLD);
    }
  }
  const double seconds = MPI_Wtime() - start;
  if (rank != 0 || seconds <= 0) return 0;
  return static_cast<double>(per_window) * iterations / seconds / 1e6;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  int ranks = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  const Options o = parse(argc, argv);
  if (ranks < 2) {
    if (rank == 0) std::fprintf(stderr, "mpi_bw: needs 2 ranks (mpirun -np 2 mpi_bw)\n");
    MPI_Finalize();
    return 2;
  }
  std::vector<char> buffers(static_cast<std::size_t>(std::max(o.max_size, 1L)) * o.buffers, 'a');
  if (rank == 0) {
    std::printf(
        "# mpi_bw: window %d, %s + MPI_Waitall (osu_bw method), %d buffer%s per side, "
        "%d ranks\n",
        o.window, o.issend ? "MPI_Issend" : "MPI_Isend", o.buffers, o.buffers == 1 ? "" : "s",
        ranks);
    std::printf("# size_bytes MB/s\n");
  }
  for (long size = o.min_size; size <= o.max_size; size = size == 0 ? 1 : size * 2) {
    const double mbps = measure(o, size, rank, buffers);
    if (rank == 0) {
      std::printf("%ld %.2f\n", size, mbps);
      std::fflush(stdout);
    }
    if (size == o.max_size) break;
    if (size * 2 > o.max_size) size = o.max_size / 2;
  }
  MPI_Finalize();
  return 0;
}
