#pragma once
// Application types for the control tests: only their names, enable ranks and result folders
// matter to the run plan and the summary; the applications themselves never run here.

#include <memory>
#include <string>

#include "daqflow/runtime/application.hpp"

namespace daqflow::control::testing {

class IdleApp final : public runtime::Application {
 public:
  Result<void> configure(runtime::AppContext&) override { return ok(); }
  int do_work() override { return 0; }
};

inline runtime::AppType app_type(std::string name, int rank = 0,
                                 runtime::ResultsFolder fold = nullptr) {
  runtime::AppType t;
  t.name = std::move(name);
  t.enable_rank = rank;
  t.fold_results = fold;
  t.make = [] { return std::make_unique<IdleApp>(); };
  return t;
}

}  // namespace daqflow::control::testing
