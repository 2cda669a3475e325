#pragma once
// A shared library loaded at run time (dlopen): readout plugins, farm processing plugins and
// libraries of application types. The library stays loaded while its handle lives; a symbol
// looked up in it is valid as long. Move-only. Control path only (dlopen takes the loader lock).

#include <string>
#include <string_view>

#include "daqflow/core/result.hpp"

namespace daqflow::core {

class SharedLibrary {
 public:
  SharedLibrary() = default;
  SharedLibrary(SharedLibrary&& other) noexcept;
  SharedLibrary& operator=(SharedLibrary&& other) noexcept;
  SharedLibrary(const SharedLibrary&) = delete;
  SharedLibrary& operator=(const SharedLibrary&) = delete;
  ~SharedLibrary();

  // Loads path (every symbol resolved now, none offered to later libraries); the error names the
  // path and says what the loader found wrong.
  [[nodiscard]] static Result<SharedLibrary> open(const std::string& path);

  // The symbol `name`, or nullptr when the library does not export it.
  [[nodiscard]] void* symbol(const char* name) const;
  // The exported function `name` as type Fn (a C function pointer type), or nullptr.
  template <typename Fn>
  [[nodiscard]] Fn function(const char* name) const {
    return reinterpret_cast<Fn>(symbol(name));
  }

  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] explicit operator bool() const { return handle_ != nullptr; }
  void close();

 private:
  void* handle_ = nullptr;
  std::string path_;
};

}  // namespace daqflow::core
