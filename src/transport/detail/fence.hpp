#pragma once
// A sequentially consistent fence, for the store-then-load handshakes of the inproc transport
// (announce sleep / check for work, against publish work / check for a sleeper).
//
// ThreadSanitizer does not model fences (GCC refuses them under -fsanitize=thread), so sanitizer
// builds use a seq_cst read-modify-write on one shared atomic instead: whichever thread's RMW
// comes second synchronises with the first, which orders the handshake at least as strongly.

#include <atomic>

#include "daqflow/core/sanitizers.hpp"

namespace daqflow::transport::detail {

inline void full_fence() {
#if DAQFLOW_UNDER_TSAN
  static std::atomic<unsigned> shared{0};
  shared.fetch_add(1, std::memory_order_seq_cst);
#else
  std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}

}  // namespace daqflow::transport::detail
