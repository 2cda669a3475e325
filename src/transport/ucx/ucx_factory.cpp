// The ucx transport: one UCP context per process, an endpoint (with its own worker) per
// application.

#include <mutex>
#include <set>
#include <string>

#include "transport/detail/endpoint_common.hpp"
#include "transport/factories.hpp"
#include "ucx_context.hpp"
#include "ucx_endpoint.hpp"

namespace daqflow::transport {
namespace ucx {
namespace {

// The applications of this process that have an endpoint: a second one is refused.
struct Registry {
  std::mutex mutex;
  std::set<AppIndex> live;
};

class UcxTransport final : public Transport {
 public:
  UcxTransport(const AddressTable& addresses, std::shared_ptr<Context> context)
      : addresses_(addresses),
        context_(std::move(context)),
        registry_(std::make_shared<Registry>()) {}

  [[nodiscard]] std::string_view name() const override { return "ucx"; }

  [[nodiscard]] Result<std::unique_ptr<Endpoint>> create_endpoint(
      const EndpointOptions& options) override {
    auto checked = detail::check_endpoint_options("ucx", addresses_, options);
    if (!checked) return checked.error();
    const std::string& who = *checked;
    {
      std::lock_guard lock(registry_->mutex);
      if (!registry_->live.insert(options.self).second) {
        return Error(ErrorCode::conflict, who + ": this process has one already");
      }
    }
    std::shared_ptr<void> registration(nullptr, [registry = registry_, self = options.self](void*) {
      std::lock_guard lock(registry->mutex);
      registry->live.erase(self);
    });
    auto endpoint =
        std::make_unique<UcxEndpoint>(addresses_, options, context_, std::move(registration));
    auto started = endpoint->start();
    if (!started) return started.error();
    return std::unique_ptr<Endpoint>(std::move(endpoint));
  }

 private:
  const AddressTable& addresses_;
  std::shared_ptr<Context> context_;
  std::shared_ptr<Registry> registry_;
};

}  // namespace

}  // namespace ucx

Result<std::unique_ptr<Transport>> make_ucx_transport(const AddressTable& addresses,
                                                      const UcxOptions& options) {
  auto context = ucx::Context::create(options, addresses.size());
  if (!context) return context.error();
  return std::unique_ptr<Transport>(
      std::make_unique<ucx::UcxTransport>(addresses, std::move(*context)));
}

}  // namespace daqflow::transport
