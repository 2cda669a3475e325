#pragma once
// A loaded readout plugin (include/daqflow/readout_plugin.h): the library, its ABI checked, its
// state from init, and its calls. The RU's and the EVM's plugin input (plugin_input.cpp) and the
// time-slice input's plugin intervals use it. Errors name the library.
//
// Threading: load() and the destructor (stop, fini, unload) on the control thread; produce() on
// the agent thread, as the header says.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "daqflow/core/result.hpp"
#include "daqflow/core/shared_library.hpp"
#include "daqflow/readout_plugin.h"

namespace daqflow::apps::fed {

class ReadoutPlugin {
 public:
  struct Setup {
    std::string app;
    std::string library;
    std::string config;
    std::uint32_t what = DAQFLOW_READOUT_FRAGMENTS;
    std::vector<std::uint16_t> source_ids;
    std::uint64_t microslice_ns = 0;
    std::uint32_t microslices_per_interval = 0;
  };

  // Loads the library, checks its ABI version and exports, and calls its init. Errors: the
  // library cannot be loaded, lacks a required export, is built for another ABI version, or its
  // init refused (with the reason it wrote).
  [[nodiscard]] static Result<std::unique_ptr<ReadoutPlugin>> load(const Setup& setup);
  ReadoutPlugin(const ReadoutPlugin&) = delete;
  ReadoutPlugin& operator=(const ReadoutPlugin&) = delete;
  ~ReadoutPlugin();

  [[nodiscard]] const daqflow_readout_info& info() const { return info_; }
  // "readout plugin 'PATH'": how messages name it.
  [[nodiscard]] const std::string& name() const { return name_; }

  // Calls produce with the request's error text pointed at this plugin's buffer (cleared first).
  [[nodiscard]] int produce(daqflow_readout_request& request);
  // The text a FAILED produce wrote.
  [[nodiscard]] std::string error() const;
  // Stops the plugin's I/O threads: produce is not called after. Idempotent.
  void stop();

 private:
  ReadoutPlugin() = default;

  core::SharedLibrary library_;
  std::string name_;
  void* state_ = nullptr;
  daqflow_readout_info info_{};
  daqflow_readout_produce_fn produce_ = nullptr;
  daqflow_readout_stop_fn stop_ = nullptr;
  daqflow_readout_fini_fn fini_ = nullptr;
  bool stopped_ = false;
  std::vector<char> error_;
};

}  // namespace daqflow::apps::fed
