// The conformance suite on real threads, for every transport built in but sim.

#include <thread>

#include "harness.hpp"

namespace daqflow::transport::conformance {

std::vector<std::string_view> suite_transports() {
  std::vector<std::string_view> names;
  for (const std::string_view name : transport_names()) {
    if (name != "sim") names.push_back(name);
  }
  return names;
}

struct Concurrent::Impl {
  std::thread thread;
};

Concurrent::Concurrent(std::function<void()> f)
    : impl_(std::make_unique<Impl>(Impl{std::thread(std::move(f))})) {}
Concurrent::Concurrent(Concurrent&&) noexcept = default;
Concurrent& Concurrent::operator=(Concurrent&&) noexcept = default;
Concurrent::~Concurrent() {
  join();
}

void Concurrent::join() {
  if (impl_ && impl_->thread.joinable()) impl_->thread.join();
}

}  // namespace daqflow::transport::conformance
