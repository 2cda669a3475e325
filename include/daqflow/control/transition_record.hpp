#pragma once
// One application's part in one transition of a run: what `daqflow run` prints, the summary
// carries and the run registry keeps.
#include <cstdint>
#include <string>

namespace daqflow::control {

struct TransitionRecord {
  std::int64_t at_ms = 0;   // Unix time the controller began waiting for the transition
  std::string transition;   // configure, enable, halt
  std::string application;  // its id
  // ok; failed (the application's reason); lost (its context died or went silent); no answer
  // (still short of the state when the wait timed out); not reached (the wait ended for another
  // reason, given)
  std::string outcome;
  double duration_ms = 0;  // from the start of the wait to the state reached, or to the end
  std::string reason;      // empty when ok
};

}  // namespace daqflow::control
