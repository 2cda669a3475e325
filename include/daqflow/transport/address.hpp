#pragma once
// The cluster's address table as the transports see it: every application by index, with the
// context (process) it lives in and the address its endpoint listens on.

#include <cstdint>
#include <string>
#include <vector>

namespace daqflow::transport {

using AppIndex = std::uint32_t;

struct AppAddress {
  AppIndex index = 0;
  std::string id;               // the application id from the configuration, e.g. "ru1"
  std::string context;          // the context (executive) hosting it
  std::string host;             // IP address or host name of that context
  std::uint16_t data_port = 0;  // where its endpoint listens (tcp); 0 when it needs none
};

// Indexed by AppIndex: table[i].index == i.
using AddressTable = std::vector<AppAddress>;

}  // namespace daqflow::transport
