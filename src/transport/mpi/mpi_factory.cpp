// The mpi transport (the mpila design on Open MPI): one engine thread per process drives MPI;
// applications map to ranks by their context (MpiOptions::contexts, rank order).
#include <cstdlib>
#include <string>

#include "mpi_domain.hpp"
#include "mpi_endpoint.hpp"
#include "mpi_engine.hpp"
#include "transport/detail/endpoint_common.hpp"
#include "transport/factories.hpp"

namespace daqflow::transport {
namespace mpi {
namespace {

// This process's place in the job, as mpirun tells it (MPI itself may still be initialising).
int env_int(const char* name, int fallback) {
  const char* value = std::getenv(name);
  return value != nullptr ? std::atoi(value) : fallback;
}

class MpiTransport final : public Transport {
 public:
  MpiTransport(const AddressTable& addresses, std::shared_ptr<const std::vector<int>> rank_of,
               int rank, Polling polling)
      : addresses_(addresses),
        rank_of_(std::move(rank_of)),
        rank_(rank),
        registry_(std::make_shared<Registry>()),
        domain_(std::make_shared<Domain>(*rank_of_, polling)) {
    registry_->live.assign(addresses.size(), false);
    Engine::instance().add(domain_);
  }
  ~MpiTransport() override { Engine::instance().remove(domain_); }
  MpiTransport(const MpiTransport&) = delete;
  MpiTransport& operator=(const MpiTransport&) = delete;

  [[nodiscard]] std::string_view name() const override { return "mpi"; }

  [[nodiscard]] Result<std::unique_ptr<Endpoint>> create_endpoint(
      const EndpointOptions& options) override {
    auto checked = detail::check_endpoint_options("mpi", addresses_, options);
    if (!checked) return checked.error();
    std::string who = *checked;
    const AppAddress& me = addresses_[options.self];
    const int rank = (*rank_of_)[options.self];
    if (rank < 0) {
      return Error(who + ": its context '" + me.context +
                   "' is not one of the mpi contexts (no mpi application there?)");
    }
    if (rank != rank_) {
      return Error(who + ": its context '" + me.context + "' is MPI rank " + std::to_string(rank) +
                   " but this process is rank " + std::to_string(rank_) +
                   " (start the contexts with daqflow run, which orders the ranks)");
    }
    if (auto failure = Engine::instance().failure(); !failure.empty()) {
      return Error(ErrorCode::unavailable, who + ": " + failure);
    }
    {
      std::lock_guard lock(registry_->mutex);
      if (registry_->live[options.self]) {
        return Error(ErrorCode::conflict,
                     who + ": the application already has an endpoint on this transport");
      }
      registry_->live[options.self] = true;
    }
    auto pool = core::BufferPool::create(me.id + ".mpi.recv",
                                         std::max<std::size_t>(options.max_message_size, 64),
                                         options.recv_buffers);
    if (!pool) {
      std::lock_guard lock(registry_->mutex);
      registry_->live[options.self] = false;
      return pool.error().context(who + ": receive pool");
    }
    auto channel = std::make_shared<Channel>(options, std::move(*pool), addresses_.size());
    Engine::instance().post(
        [domain = domain_, self = options.self, channel] { domain->attach(self, channel); });
    return std::unique_ptr<Endpoint>(std::make_unique<MpiEndpoint>(
        addresses_, registry_, std::move(channel), rank_of_, std::move(who)));
  }

 private:
  const AddressTable& addresses_;
  std::shared_ptr<const std::vector<int>> rank_of_;
  int rank_;
  std::shared_ptr<Registry> registry_;
  std::shared_ptr<Domain> domain_;
};

}  // namespace
}  // namespace mpi

Result<std::unique_ptr<Transport>> make_mpi_transport(const AddressTable& addresses,
                                                      const MpiOptions& options) {
  auto polling = mpi::parse_polling(options.completion);
  if (!polling) return polling.error().context("mpi transport");
  const int size = mpi::env_int("OMPI_COMM_WORLD_SIZE", 1);
  const int rank = mpi::env_int("OMPI_COMM_WORLD_RANK", 0);
  if (size > 1 && static_cast<std::size_t>(size) != options.contexts.size()) {
    return Error("mpi transport: mpirun started " + std::to_string(size) +
                 " ranks but the configuration has " + std::to_string(options.contexts.size()) +
                 " contexts with mpi applications (one rank each)");
  }
  auto rank_of = std::make_shared<std::vector<int>>(addresses.size(), -1);
  for (std::size_t a = 0; a < addresses.size(); ++a) {
    for (std::size_t r = 0; r < options.contexts.size(); ++r) {
      if (options.contexts[r] == addresses[a].context) {
        // A job of one process (no mpirun) hosts every context itself.
        (*rank_of)[a] = size == 1 ? 0 : static_cast<int>(r);
        break;
      }
    }
  }
  if (auto failure = mpi::Engine::instance().failure(); !failure.empty()) {
    return Error(ErrorCode::unavailable, "mpi transport: " + failure);
  }
  return std::unique_ptr<Transport>(
      std::make_unique<mpi::MpiTransport>(addresses, std::move(rank_of), rank, *polling));
}

}  // namespace daqflow::transport
