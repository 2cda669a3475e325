#pragma once
// Result<T>: the control path's value-or-error. The data path never uses it (it returns small
// status codes instead); set-up, configuration and run control do, adding context as an error
// travels up (`error.context("configuring ru1")`).
//
// An Error carries a code beside its message, as Abseil's Status does, so that a caller decides
// by what kind of failure it is (the HTTP API maps codes to statuses in one place) and a person
// reads the message.

#include <cerrno>
#include <cstdint>
#include <string>
#include <utility>
#include <variant>

namespace daqflow {

enum class ErrorCode : std::uint8_t {
  invalid_argument,  // the request or the configuration is wrong: fix it and retry
  not_found,         // what was named does not exist
  conflict,          // not allowed in the current state (a command, a parameter change)
  unavailable,       // a peer, a port or a resource cannot be reached now; may succeed later
  timed_out,         // a peer took the request but did not answer in time: slow, or frozen
  internal,          // a bug or an unexpected failure of the system
};

[[nodiscard]] constexpr const char* to_string(ErrorCode code) {
  switch (code) {
    case ErrorCode::invalid_argument:
      return "invalid argument";
    case ErrorCode::not_found:
      return "not found";
    case ErrorCode::conflict:
      return "conflict";
    case ErrorCode::unavailable:
      return "unavailable";
    case ErrorCode::timed_out:
      return "timed out";
    case ErrorCode::internal:
      return "internal";
  }
  return "internal";
}

// The code that fits a failed system call's errno: what does not exist (ENOENT) is not_found, what
// exists already (EEXIST) a conflict, a resource in use, exhausted or out of reach (EADDRINUSE,
// ENOMEM, ENOSPC, EMFILE, ECONNREFUSED, EACCES, ...) unavailable, a timeout timed_out, an argument
// the call refused (EINVAL) invalid_argument, anything else internal.
[[nodiscard]] constexpr ErrorCode code_of_errno(int err) {
  switch (err) {
    case ENOENT:
    case ENODEV:
    case ENXIO:
    case ESRCH:
      return ErrorCode::not_found;
    case EEXIST:
      return ErrorCode::conflict;
    case ETIMEDOUT:
      return ErrorCode::timed_out;
    case EINVAL:
    case ENAMETOOLONG:
      return ErrorCode::invalid_argument;
    case EADDRINUSE:
    case EADDRNOTAVAIL:
    case EBUSY:
    case EAGAIN:
    case ENOMEM:
    case ENOSPC:
    case EDQUOT:
    case EMFILE:
    case ENFILE:
    case EACCES:
    case EPERM:
    case EROFS:
    case EIO:
    case EPIPE:
    case ECONNREFUSED:
    case ECONNRESET:
    case ECONNABORTED:
    case EHOSTUNREACH:
    case ENETUNREACH:
    case ENETDOWN:
      return ErrorCode::unavailable;
    default:
      return ErrorCode::internal;
  }
}

// An error a person will read: what went wrong, with the context layers prepended.
class Error {
 public:
  Error() = default;
  // Most errors of the control path are about what was asked or configured.
  explicit Error(std::string message) : message_(std::move(message)) {}
  Error(ErrorCode code, std::string message) : message_(std::move(message)), code_(code) {}

  [[nodiscard]] const std::string& message() const { return message_; }
  [[nodiscard]] ErrorCode code() const { return code_; }

  // Returns this error with "what: " put in front, for the layer above; the code stays.
  [[nodiscard]] Error context(const std::string& what) const& {
    return Error(code_, what + ": " + message_);
  }
  [[nodiscard]] Error context(const std::string& what) && {
    message_.insert(0, what + ": ");
    return std::move(*this);
  }

 private:
  std::string message_;
  ErrorCode code_ = ErrorCode::invalid_argument;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit by design
  Result(Error error) : v_(std::in_place_index<1>, std::move(error)) {}  // NOLINT

  [[nodiscard]] bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  [[nodiscard]] const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT: implicit by design

  [[nodiscard]] bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  [[nodiscard]] const Error& error() const { return error_; }

 private:
  Error error_;
  bool ok_ = true;
};

inline Result<void> ok() {
  return {};
}

}  // namespace daqflow
