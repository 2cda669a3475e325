// A readout plugin (daqflow/readout_plugin.h) that gives the FED emulator's fragments: the
// emulator of apps/fed/emulator.hpp behind the plugin ABI, so that `daqflow bench evb --readout`
// compares the plugin path with the built-in emulator on the very same data.
//
// config: `mean=B sd=B min=B max=B seed=N` (lognormal sizes; the defaults are the RU's:
// 2048, 1024, 64, 65536, 1).

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "daqflow/apps/fed/emulator.hpp"
#include "daqflow/readout_plugin.h"

namespace {

using daqflow::apps::fed::FedEmulator;

double number(const char* config, const char* key, double fallback) {
  const std::string text = std::string(" ") + config;
  const std::string wanted = std::string(" ") + key + "=";
  const std::size_t at = text.find(wanted);
  return at == std::string::npos ? fallback : std::atof(text.c_str() + at + wanted.size());
}

struct State {
  std::unique_ptr<FedEmulator> emulator;
};

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int daqflow_readout_abi() {
  return DAQFLOW_READOUT_ABI;
}

__attribute__((visibility("default"))) void* daqflow_readout_init(
    const daqflow_readout_setup* setup, daqflow_readout_info* info) {
  if (setup->what != DAQFLOW_READOUT_FRAGMENTS || setup->sources == 0) {
    std::snprintf(setup->error, setup->error_size, "gives a RU's FED fragments only");
    return nullptr;
  }
  daqflow::apps::fed::EmulatorSettings s;
  s.feds = setup->sources;
  s.first_fed_id = setup->source_ids[0];
  s.size.mean = number(setup->config, "mean", 2048);
  s.size.sd = number(setup->config, "sd", 1024);
  s.size.min = static_cast<std::uint32_t>(number(setup->config, "min", 64));
  s.size.max = static_cast<std::uint32_t>(number(setup->config, "max", 65536));
  s.seed = static_cast<std::uint64_t>(number(setup->config, "seed", 1));
  auto emulator = FedEmulator::create(s);
  if (!emulator) {
    std::snprintf(setup->error, setup->error_size, "%s", emulator.error().message().c_str());
    return nullptr;
  }
  info->format = DAQFLOW_READOUT_FED_FRAGMENTS;
  info->max_event_bytes = (*emulator)->max_super_fragment_size();
  return new State{std::move(*emulator)};
}

__attribute__((visibility("default"))) int daqflow_readout_produce(
    void* state, daqflow_readout_request* request) {
  FedEmulator& e = *static_cast<State*>(state)->emulator;
  const auto out = std::span(static_cast<std::byte*>(request->data), request->capacity);
  const auto produced = e.produce(request->index, out);
  if (produced.status == daqflow::apps::fed::Produced::Status::no_room) {
    request->size = e.super_fragment_size(request->index);
    return DAQFLOW_READOUT_NO_ROOM;
  }
  for (std::size_t i = 0; i < e.fed_count(); ++i) {
    request->fragments[i].source_id = e.fed_id(i);
    request->fragments[i].event = request->l1_id;
    request->fragments[i].size = e.fragment_size(i, request->index);
  }
  request->size = produced.bytes;
  request->count = static_cast<std::uint32_t>(e.fed_count());
  return DAQFLOW_READOUT_READY;
}

__attribute__((visibility("default"))) void daqflow_readout_fini(void* state) {
  delete static_cast<State*>(state);
}
}
