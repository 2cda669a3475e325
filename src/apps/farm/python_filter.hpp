#pragma once
// A worker's Python filter (processing: {kind: python}): the function runs in an interpreter
// embedded in the worker by the daqflow package's filter host, a farm plugin
// (daqflow/lib/libdaqflow_python_filter.so in the package). The worker finds it by asking the
// interpreter the configuration names (a virtual environment's bin/python; else $DAQFLOW_PYTHON,
// else python3 on PATH) where its daqflow package is, and what its executable and module search
// path are: the embedded interpreter gets the same, so that the function imports what that
// interpreter would.

#include <string>

#include "daqflow/core/result.hpp"

namespace daqflow::apps::farm {

struct PythonFilter {
  std::string module;
  std::string function;
  std::string python;  // the interpreter; empty: $DAQFLOW_PYTHON, else python3
  std::string path;    // a folder put first on the module search path; empty: none
};

// What the worker loads: the filter host's path and its configuration text (one key=value a
// line: executable, module, function, and path once per entry of the module search path).
struct FilterHost {
  std::string library;
  std::string config;
};

// Asks the interpreter (it runs once, at Configure); the error says what it printed when it
// cannot load the daqflow package, and how to install it.
[[nodiscard]] Result<FilterHost> python_filter_host(const PythonFilter& filter);

}  // namespace daqflow::apps::farm
