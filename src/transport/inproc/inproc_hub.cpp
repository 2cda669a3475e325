#include "inproc_hub.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

namespace daqflow::transport::inproc {

Result<std::shared_ptr<Signal>> Signal::create() {
  const int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (fd < 0)
    return Error(code_of_errno(errno),
                 std::string("cannot create an eventfd: ") + std::strerror(errno));
  return std::make_shared<Signal>(fd);
}

Signal::~Signal() {
  ::close(fd_);
}

void Signal::ring() {
  const std::uint64_t one = 1;
  // EAGAIN means the counter is saturated: the owner is woken anyway.
  [[maybe_unused]] const ssize_t n = ::write(fd_, &one, sizeof one);
}

void Signal::block(std::chrono::microseconds timeout) {
  pollfd p{fd_, POLLIN, 0};
  const timespec ts{static_cast<time_t>(timeout.count() / 1'000'000),
                    static_cast<long>(timeout.count() % 1'000'000) * 1000};
  if (::ppoll(&p, 1, &ts, nullptr) > 0) {
    std::uint64_t count = 0;
    [[maybe_unused]] const ssize_t n = ::read(fd_, &count, sizeof count);
  }
}

std::shared_ptr<Link> Mailbox::attach(AppIndex sender, std::shared_ptr<Signal> sender_signal) {
  std::shared_ptr<Link> link;
  {
    std::lock_guard lock(mutex_);
    if (closure_.load(std::memory_order_relaxed) != Closure::open) return nullptr;
    link = std::make_shared<Link>(sender, std::move(sender_signal));
    links_.push_back(link);
  }
  signal_->notify_change();
  return link;
}

void Mailbox::scan(std::vector<AppIndex>& opened, std::vector<std::shared_ptr<Link>>& closed) {
  std::lock_guard lock(mutex_);
  for (auto& link : links_) {
    if (!link->announced) {
      link->announced = true;
      opened.push_back(link->sender);
    }
    if (!link->noted && link->sender_closure.load(std::memory_order_acquire) != Closure::open) {
      link->noted = true;
      closed.push_back(link);
    }
  }
}

void Mailbox::detach(const Link* link) {
  std::lock_guard lock(mutex_);
  std::erase_if(links_, [link](const std::shared_ptr<Link>& l) { return l.get() == link; });
}

std::vector<std::shared_ptr<Link>> Mailbox::close(Closure how) {
  std::vector<std::shared_ptr<Link>> links;
  {
    std::lock_guard lock(mutex_);
    closure_.store(how, std::memory_order_seq_cst);
    links.swap(links_);
  }
  // Pairs with the fence a sender issues between its push and its look at closure(): either the
  // sender sees the closure and takes its message back, or this drain sees the message.
  detail::full_fence();
  drain();
  return links;
}

bool Mailbox::drain(const Link* link, std::uint64_t sequence, Message* reclaimed) {
  bool found = false;
  Delivery d;
  while (inbound_.try_pop(d)) {
    if (reclaimed != nullptr && d.link == link && d.sequence == sequence) {
      *reclaimed = std::move(d.message);
      found = true;
    }
    d.message.clear();
  }
  return found;
}

Result<void> Hub::publish(const std::shared_ptr<Mailbox>& mailbox) {
  std::vector<std::shared_ptr<Mailbox>> others;
  {
    std::lock_guard lock(mutex_);
    const AppIndex index = mailbox->owner();
    if (index >= mailboxes_.size()) {
      return Error("application index " + std::to_string(index) + " is not in the address table (" +
                   std::to_string(mailboxes_.size()) + " applications)");
    }
    if (mailboxes_[index] != nullptr) {
      return Error(ErrorCode::conflict,
                   "the application already has an endpoint on this transport");
    }
    mailboxes_[index] = mailbox;
    generation_.fetch_add(1, std::memory_order_acq_rel);
    others.reserve(mailboxes_.size());
    for (const auto& m : mailboxes_) {
      if (m != nullptr && m != mailbox) others.push_back(m);
    }
  }
  // Endpoints waiting for this one to appear rescan.
  for (const auto& m : others) m->signal().notify_change();
  return ok();
}

void Hub::withdraw(const Mailbox& mailbox) {
  std::lock_guard lock(mutex_);
  auto& slot = mailboxes_[mailbox.owner()];
  if (slot.get() == &mailbox) slot.reset();
}

std::shared_ptr<Mailbox> Hub::find(AppIndex index) {
  std::lock_guard lock(mutex_);
  if (index >= mailboxes_.size()) return nullptr;
  return mailboxes_[index];
}

}  // namespace daqflow::transport::inproc
