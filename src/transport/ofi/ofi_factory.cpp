// The ofi transport: creates each application's libfabric endpoint on the configured provider.

#include <arpa/inet.h>
#include <netdb.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_errno.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>

#include "ofi_endpoint.hpp"
#include "transport/detail/endpoint_common.hpp"
#include "transport/factories.hpp"

namespace daqflow::transport {
namespace ofi {
namespace {

// Region names must be plain file names in /dev/shm.
std::string sanitize(const std::string& text) {
  std::string out = text;
  for (char& c : out) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '.' || c == '-' || c == '_';
    if (!plain) c = '_';
  }
  return out;
}

Result<sockaddr_in> resolve_ipv4(const AppAddress& a) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(a.data_port);
  const int rc = ::getaddrinfo(a.host.c_str(), port.c_str(), &hints, &found);
  if (rc != 0 || found == nullptr) {
    return Error(ErrorCode::not_found, "cannot resolve host '" + a.host + "' of application '" +
                                           a.id + "': " + ::gai_strerror(rc));
  }
  sockaddr_in out{};
  std::memcpy(&out, found->ai_addr, sizeof out);
  ::freeaddrinfo(found);
  return out;
}

void close_fids(EndpointFids& f) {
  if (f.ep != nullptr) (void)fi_close(&f.ep->fid);
  if (f.cq != nullptr) (void)fi_close(&f.cq->fid);
  if (f.av != nullptr) (void)fi_close(&f.av->fid);
  f = EndpointFids{};
}

class OfiTransport final : public Transport {
 public:
  OfiTransport(const AddressTable& table, const OfiOptions& options, const std::string& run_tag)
      : table_(table),
        provider_(options.provider.empty() ? "tcp;ofi_rxm" : options.provider),
        shm_prefix_(provider_ == "shm" ? "dfofi." + sanitize(run_tag) + "." : "") {}

  [[nodiscard]] std::string_view name() const override { return "ofi"; }

  [[nodiscard]] Result<std::unique_ptr<Endpoint>> create_endpoint(
      const EndpointOptions& options) override {
    auto checked = detail::check_endpoint_options("ofi", table_, options);
    if (!checked) return checked.error();
    const AppAddress& me = table_[options.self];
    const std::string who = *checked + " (provider '" + provider_ + "')";
    auto made = create(options, me);
    if (!made) return made.error().context(who);
    return made;
  }

 private:
  // Every peer's address is its host and data port, inserted into the address vector: no
  // exchange needed.
  Result<void> insert_peers(OfiEndpoint::Parts& parts) const {
    for (AppIndex i = 0; i < table_.size(); ++i) {
      if (table_[i].data_port == 0) continue;
      auto address = resolve_ipv4(table_[i]);
      if (!address) return address.error();
      fi_addr_t addr = FI_ADDR_NOTAVAIL;
      if (fi_av_insert(parts.fids.av, &*address, 1, &addr, 0, nullptr) != 1) {
        return Error(ErrorCode::internal,
                     "cannot insert the address of application '" + table_[i].id + "'");
      }
      parts.addresses[i] = addr;
    }
    return ok();
  }

  Result<std::unique_ptr<Endpoint>> create(const EndpointOptions& options, const AppAddress& me) {
    const bool shm = !shm_prefix_.empty();
    SourceAddress source;
    if (shm) {
      source.node = shm_prefix_ + std::to_string(options.self);
    } else {
      if (me.data_port == 0) return Error("it needs a data port in the address table");
      source.node = me.host;
      source.service = std::to_string(me.data_port);
    }
    auto domain = open_domain(provider_, source);
    if (!domain) return domain.error();
    OfiEndpoint::Parts parts;
    parts.domain = *domain;
    parts.fids.domain = *domain;
    auto failed = [&](const std::string& what, int rc) {
      close_fids(parts.fids);
      return Error(code_of_errno(rc < 0 ? -rc : rc), what + ": " + fi_strerror(rc < 0 ? -rc : rc));
    };
    const std::size_t peers = table_.size();
    fi_av_attr av{};
    av.type = FI_AV_TABLE;
    av.count = peers;
    int rc = fi_av_open(parts.domain->domain, &av, &parts.fids.av, nullptr);
    if (rc != 0) return failed("cannot open an address vector", rc);
    fi_cq_attr cq{};
    cq.format = FI_CQ_FORMAT_TAGGED;
    cq.size = peers * (options.pipeline_depth + 3) * 2 + options.recv_buffers + 16 * peers + 256;
    cq.wait_obj = FI_WAIT_FD;
    rc = fi_cq_open(parts.domain->domain, &cq, &parts.fids.cq, nullptr);
    if (rc != 0) {
      // Providers without wait objects (shm): wait() naps instead.
      cq.wait_obj = FI_WAIT_NONE;
      rc = fi_cq_open(parts.domain->domain, &cq, &parts.fids.cq, nullptr);
      if (rc != 0) return failed("cannot open a completion queue", rc);
    } else if (fi_control(&parts.fids.cq->fid, FI_GETWAIT, &parts.wait_fd) != 0) {
      parts.wait_fd = -1;
    }
    rc = fi_endpoint(parts.domain->domain, parts.domain->info, &parts.fids.ep, nullptr);
    const std::string where =
        shm ? "shared-memory name '" + source.node + "'" : me.host + ":" + source.service;
    if (rc == -FI_EADDRINUSE || rc == -FI_EBUSY) {
      return failed("another endpoint already listens at " + where, rc);
    }
    if (rc != 0) return failed("cannot open an endpoint at " + where, rc);
    rc = fi_ep_bind(parts.fids.ep, &parts.fids.av->fid, 0);
    if (rc == 0) rc = fi_ep_bind(parts.fids.ep, &parts.fids.cq->fid, FI_TRANSMIT | FI_RECV);
    if (rc != 0) return failed("cannot bind the endpoint", rc);
    rc = fi_enable(parts.fids.ep);
    if (rc == -FI_EADDRINUSE || rc == -FI_EBUSY) {
      return failed("another endpoint already listens at " + where, rc);
    }
    if (rc != 0) return failed("cannot enable the endpoint at " + where, rc);

    parts.addresses.assign(peers, FI_ADDR_NOTAVAIL);
    if (!shm) {
      if (auto inserted = insert_peers(parts); !inserted) {
        close_fids(parts.fids);
        return inserted.error();
      }
    }
    const std::size_t receive_size = kHeaderOffset + wire::kHeaderSize + options.max_message_size;
    std::shared_ptr<RegisteredRegion> region;
    auto receive = make_registered_pool(parts.domain, me.id + ".ofi-receive", receive_size,
                                        options.recv_buffers, &region);
    if (!receive) {
      close_fids(parts.fids);
      return receive.error();
    }
    parts.receive_pool = std::move(*receive);
    parts.receive_desc = region->desc();
    auto bounce = make_registered_pool(parts.domain, me.id + ".ofi-bounce",
                                       std::max<std::uint32_t>(options.max_message_size, 1),
                                       options.pipeline_depth, &region);
    if (!bounce) {
      close_fids(parts.fids);
      return bounce.error();
    }
    parts.bounce_pool = std::move(*bounce);
    parts.bounce_desc = region->desc();
    const std::size_t control_bytes =
        kSlotBytes * peers * options.pipeline_depth + kControlSize * (peers * 3 + 16 + 2 * peers);
    auto control = RegisteredRegion::create(parts.domain, control_bytes);
    if (!control) {
      close_fids(parts.fids);
      return control.error();
    }
    parts.control = std::move(*control);
    return std::unique_ptr<Endpoint>(
        std::make_unique<OfiEndpoint>(table_, options, shm_prefix_, std::move(parts)));
  }

  const AddressTable& table_;
  std::string provider_;
  std::string shm_prefix_;
};

}  // namespace
}  // namespace ofi

Result<std::unique_ptr<Transport>> make_ofi_transport(const AddressTable& addresses,
                                                      const OfiOptions& options,
                                                      const std::string& run_tag) {
  return std::unique_ptr<Transport>(
      std::make_unique<ofi::OfiTransport>(addresses, options, run_tag));
}

}  // namespace daqflow::transport
