#pragma once
// Result<T>: the control path's value-or-error. The data path never uses it (it returns small
// status codes instead); set-up, configuration and run control do, adding context as an error
// travels up (`error.context("configuring ru1")`).

#include <string>
#include <utility>
#include <variant>

namespace daqflow {

// An error a person will read: what went wrong, with the context layers prepended.
class Error {
 public:
  Error() = default;
  explicit Error(std::string message) : message_(std::move(message)) {}

  [[nodiscard]] const std::string& message() const { return message_; }

  // Returns this error with "what: " put in front, for the layer above.
  [[nodiscard]] Error context(const std::string& what) const& { return Error(what + ": " + message_); }
  [[nodiscard]] Error context(const std::string& what) && {
    message_.insert(0, what + ": ");
    return std::move(*this);
  }

 private:
  std::string message_;
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

inline Result<void> ok() { return {}; }

}  // namespace daqflow
