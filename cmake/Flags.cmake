# Compiler flags for every target, defined once.
set(CMAKE_CXX_STANDARD 20)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_CXX_EXTENSIONS OFF)
set(CMAKE_EXPORT_COMPILE_COMMANDS ON)
set(CMAKE_POSITION_INDEPENDENT_CODE ON)

if(NOT CMAKE_BUILD_TYPE)
  set(CMAKE_BUILD_TYPE Release)
endif()

# ccache with the project's folder as its base: paths under it are hashed relative to the build
# folder, so that trees at the same depth (build/, build-python/: the Python package's) share
# what they compiled.
find_program(CCACHE_PROGRAM ccache)
if(CCACHE_PROGRAM)
  set(CMAKE_CXX_COMPILER_LAUNCHER ${CMAKE_COMMAND} -E env CCACHE_BASEDIR=${PROJECT_SOURCE_DIR}
      ${CCACHE_PROGRAM})
endif()

add_library(daqflow_flags INTERFACE)
target_compile_options(daqflow_flags INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wold-style-cast -Wcast-align
  -Woverloaded-virtual -Wnull-dereference -Wimplicit-fallthrough -Werror
  -fno-omit-frame-pointer)
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  # GCC 12 reports false positives for these in optimised STL code.
  target_compile_options(daqflow_flags INTERFACE -Wno-maybe-uninitialized -Wno-stringop-overflow
    -Wno-array-bounds -Wno-restrict -Wno-null-dereference)
  # The libraries are shared (-fPIC): calls inside one of them stay direct, as in a static build,
  # rather than going through the PLT in case another library replaces the function.
  target_compile_options(daqflow_flags INTERFACE -fno-semantic-interposition)
endif()

if(DAQFLOW_FUZZ)
  # The libraries are instrumented too, so that the fuzzers get coverage feedback and sanitizer
  # checks inside the decoders, not only in the harnesses; the fuzzers run under the sanitizers.
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "DAQFLOW_FUZZ needs clang (libFuzzer): configure with "
                        "-DCMAKE_CXX_COMPILER=clang++")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link)
  set(DAQFLOW_SANITIZE ON)
endif()

if(DAQFLOW_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()

if(DAQFLOW_TSAN)
  add_compile_options(-fsanitize=thread)
  add_link_options(-fsanitize=thread)
endif()
