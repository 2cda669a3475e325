#pragma once
// Completing a queue's pending MPI requests with the procedure the configuration names: one of
// three polling strategies (testsome, test, testall; Polling below).
//
// A queue keeps its requests in a ring of fixed capacity in posting order; entries not in use are
// MPI_REQUEST_NULL. MPI sets a request to MPI_REQUEST_NULL when it completes, so "done" needs no
// flag of its own: the owner walks from the head while the head's requests are null.

#include <string_view>
#include <vector>

#include "daqflow/core/result.hpp"
#include "mpi_api.hpp"

namespace daqflow::transport::mpi {

enum class Polling : std::uint8_t {
  testsome,  // MPI_Testsome over the queue's whole ring
  test,      // MPI_Test on the oldest request, then the next while they complete (FIFO order)
  testall,   // MPI_Testall over the ring: nothing completes until everything posted has
};

[[nodiscard]] Result<Polling> parse_polling(std::string_view name);

// Scratch space for MPI_Testsome, owned by the engine thread.
struct PollScratch {
  std::vector<int> indices;
  std::vector<MPI_Status> statuses;
};

// Tests a ring of `capacity` requests whose `count` in use start at `head`. Statuses of completed
// requests land at the same positions in `statuses`. Returns how many completed.
int test_ring(Polling mode, MPI_Request* requests, MPI_Status* statuses, int capacity, int head,
              int count, PollScratch& scratch);

}  // namespace daqflow::transport::mpi
