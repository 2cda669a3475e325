#include "mpi_requests.hpp"

#include <string>

namespace daqflow::transport::mpi {

Result<Polling> parse_polling(std::string_view name) {
  if (name == "testsome" || name.empty()) return Polling::testsome;
  if (name == "test") return Polling::test;
  if (name == "testall") return Polling::testall;
  return Error("mpi_completion '" + std::string(name) + "' is not one of testsome, test, testall");
}

int test_ring(Polling mode, MPI_Request* requests, MPI_Status* statuses, int capacity, int head,
              int count, PollScratch& scratch) {
  if (count == 0) return 0;
  switch (mode) {
    case Polling::testsome: {
      if (scratch.indices.size() < static_cast<std::size_t>(capacity)) {
        scratch.indices.resize(capacity);
        scratch.statuses.resize(capacity);
      }
      int done = 0;
      MPI_Testsome(capacity, requests, &done, scratch.indices.data(), scratch.statuses.data());
      if (done == MPI_UNDEFINED) return 0;
      for (int k = 0; k < done; ++k) statuses[scratch.indices[k]] = scratch.statuses[k];
      return done;
    }
    case Polling::testall: {
      int all = 0;
      MPI_Testall(capacity, requests, &all, statuses);
      return all != 0 ? count : 0;
    }
    case Polling::test: {
      int done = 0;
      for (int k = 0; k < count; ++k) {
        const int i = (head + k) % capacity;
        if (requests[i] == MPI_REQUEST_NULL) continue;
        int flag = 0;
        MPI_Test(&requests[i], &flag, &statuses[i]);
        if (flag == 0) break;
        ++done;
      }
      return done;
    }
  }
  return 0;
}

}  // namespace daqflow::transport::mpi
