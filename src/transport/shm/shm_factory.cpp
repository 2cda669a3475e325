// The shm transport: creates each application's endpoint segment and endpoint.

#include <unistd.h>

#include <new>

#include "shm_endpoint.hpp"
#include "transport/detail/endpoint_common.hpp"
#include "transport/factories.hpp"

namespace daqflow::transport {
namespace shm {
namespace {

class ShmTransport final : public Transport {
 public:
  ShmTransport(const AddressTable& addresses, std::string run_tag)
      : addresses_(addresses), run_tag_(std::move(run_tag)) {}

  [[nodiscard]] std::string_view name() const override { return "shm"; }

  [[nodiscard]] Result<std::unique_ptr<Endpoint>> create_endpoint(
      const EndpointOptions& options) override {
    // Received messages are read in place in the sender's segment: no receive buffers.
    auto checked = detail::check_endpoint_options("shm", addresses_, options,
                                                  /*needs_recv_buffers=*/false);
    if (!checked) return checked.error();
    const std::string& who = *checked;
    const AppAddress& me = addresses_[options.self];
    Names names{&addresses_, run_tag_};
    const std::size_t bytes = endpoint_segment_bytes(addresses_.size());
    auto mapping = Mapping::create(names.of(options.self, "ep"), bytes);
    if (!mapping) return mapping.error().context(who);
    Mapping& m = **mapping;
    // A fresh segment reads as zeros: every channel is empty and unattached.
    SegmentHeader& h = *new (m.base()) SegmentHeader{};
    init_header(h, SegmentKind::endpoint, bytes, run_tag_, me.context, me.id);
    h.data_offset = kHeaderBytes;
    h.channels = addresses_.size();
    h.channel_bytes = channel_stride();
    h.run_number = options.run.number;
    h.run_key = options.run.key;
    h.state.store(SegmentState::open, std::memory_order_release);
    auto endpoint = std::make_unique<ShmEndpoint>(names, options, std::move(*mapping));
    if (auto started = endpoint->start(); !started) return started.error().context(who);
    return std::unique_ptr<Endpoint>(std::move(endpoint));
  }

 private:
  const AddressTable& addresses_;
  std::string run_tag_;
};

}  // namespace

std::size_t endpoint_segment_bytes(std::size_t applications) {
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return round_up(kHeaderBytes + applications * channel_stride(), page);
}

}  // namespace shm

Result<std::unique_ptr<Transport>> make_shm_transport(const AddressTable& addresses,
                                                      const std::string& run_tag) {
  if (run_tag.empty()) return Error("transport 'shm': the run tag must not be empty");
  return std::unique_ptr<Transport>(std::make_unique<shm::ShmTransport>(addresses, run_tag));
}

}  // namespace daqflow::transport
