#include "readout_plugin.hpp"

#include <fmt/format.h>

#include <cstring>

#include "daqflow/runtime/settings.hpp"

namespace daqflow::apps::fed {

namespace {

constexpr std::size_t kErrorSize = 1024;

std::string text_of(const std::vector<char>& buffer) {
  return {buffer.data(), ::strnlen(buffer.data(), buffer.size())};
}

}  // namespace

Result<std::unique_ptr<ReadoutPlugin>> ReadoutPlugin::load(const Setup& setup) {
  if (setup.library.empty()) {
    return runtime::param_error("input.library", "must be set for input kind plugin");
  }
  auto library = core::SharedLibrary::open(setup.library);
  if (!library) return library.error();
  std::unique_ptr<ReadoutPlugin> p(new ReadoutPlugin);
  p->name_ = fmt::format("readout plugin '{}'", setup.library);
  const auto abi = library->function<daqflow_readout_abi_fn>("daqflow_readout_abi");
  const auto init = library->function<daqflow_readout_init_fn>("daqflow_readout_init");
  p->produce_ = library->function<daqflow_readout_produce_fn>("daqflow_readout_produce");
  if (abi == nullptr || init == nullptr || p->produce_ == nullptr) {
    return Error(ErrorCode::invalid_argument,
                 p->name_ +
                     " does not export daqflow_readout_abi, daqflow_readout_init and "
                     "daqflow_readout_produce (include/daqflow/readout_plugin.h)");
  }
  if (const int version = abi(); version != DAQFLOW_READOUT_ABI) {
    return Error(ErrorCode::invalid_argument,
                 fmt::format("{} is built for readout ABI {}, this daqflow has ABI {}: rebuild it "
                             "against this daqflow's readout_plugin.h",
                             p->name_, version, DAQFLOW_READOUT_ABI));
  }
  p->stop_ = library->function<daqflow_readout_stop_fn>("daqflow_readout_stop");
  p->fini_ = library->function<daqflow_readout_fini_fn>("daqflow_readout_fini");
  p->library_ = std::move(*library);
  p->error_.assign(kErrorSize, '\0');

  daqflow_readout_setup s{};
  s.abi = DAQFLOW_READOUT_ABI;
  s.what = setup.what;
  s.app = setup.app.c_str();
  s.config = setup.config.c_str();
  s.sources = static_cast<std::uint32_t>(setup.source_ids.size());
  s.source_ids = setup.source_ids.data();
  s.microslice_ns = setup.microslice_ns;
  s.microslices_per_interval = setup.microslices_per_interval;
  s.error = p->error_.data();
  s.error_size = p->error_.size();
  p->state_ = init(&s, &p->info_);
  if (p->state_ == nullptr) {
    const std::string why = text_of(p->error_);
    return Error(ErrorCode::invalid_argument, fmt::format("{}: init failed: {}", p->name_,
                                                          why.empty() ? "no reason given" : why));
  }
  return p;
}

ReadoutPlugin::~ReadoutPlugin() {
  stop();
  if (fini_ != nullptr && state_ != nullptr) fini_(state_);
}

int ReadoutPlugin::produce(daqflow_readout_request& request) {
  error_[0] = '\0';
  request.error = error_.data();
  request.error_size = error_.size();
  return produce_(state_, &request);
}

std::string ReadoutPlugin::error() const {
  const std::string why = text_of(error_);
  return why.empty() ? "no reason given" : why;
}

void ReadoutPlugin::stop() {
  if (stopped_ || state_ == nullptr) return;
  stopped_ = true;
  if (stop_ != nullptr) stop_(state_);
}

}  // namespace daqflow::apps::fed
