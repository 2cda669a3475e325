#include "daqflow/core/shared_library.hpp"

#include <dlfcn.h>

#include <utility>

namespace daqflow::core {

SharedLibrary::SharedLibrary(SharedLibrary&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)), path_(std::move(other.path_)) {}

SharedLibrary& SharedLibrary::operator=(SharedLibrary&& other) noexcept {
  if (this != &other) {
    close();
    handle_ = std::exchange(other.handle_, nullptr);
    path_ = std::move(other.path_);
  }
  return *this;
}

SharedLibrary::~SharedLibrary() {
  close();
}

Result<SharedLibrary> SharedLibrary::open(const std::string& path) {
  SharedLibrary lib;
  lib.handle_ = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib.handle_ == nullptr) {
    const char* why = ::dlerror();
    return Error(ErrorCode::unavailable,
                 "cannot load '" + path + "': " + (why != nullptr ? why : "unknown reason"));
  }
  lib.path_ = path;
  return lib;
}

void* SharedLibrary::symbol(const char* name) const {
  return handle_ != nullptr ? ::dlsym(handle_, name) : nullptr;
}

void SharedLibrary::close() {
  if (handle_ != nullptr) ::dlclose(std::exchange(handle_, nullptr));
}

}  // namespace daqflow::core
