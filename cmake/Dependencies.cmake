# Every dependency comes from Debian's packages (scripts/bootstrap installs them).
find_package(Threads REQUIRED)
find_package(PkgConfig REQUIRED)
find_package(fmt REQUIRED)
find_package(spdlog REQUIRED)
find_package(nlohmann_json REQUIRED)
find_package(yaml-cpp REQUIRED)
find_package(CLI11 CONFIG REQUIRED)
# The control ports' HTTP server and client: Beast on Asio (header-only).
find_package(Boost 1.74 REQUIRED)
# The /metrics text format: prometheus-cpp's serializer (its core library only).
pkg_check_modules(PROMETHEUS_CPP REQUIRED IMPORTED_TARGET prometheus-cpp-core)
# The run registry's database (control/run_registry.hpp): SQLite, the embedded default, and
# PostgreSQL's client library for a registry on a server.
find_package(SQLite3 REQUIRED)
find_package(PostgreSQL REQUIRED)
# Intel's storage acceleration library: CRC-32C (crc32_iscsi), picked for the CPU at run time.
pkg_check_modules(ISAL REQUIRED IMPORTED_TARGET libisal)
# HDF5's C library (Debian's serial build, thread-safe): the hdf5 output kind.
pkg_check_modules(HDF5 REQUIRED IMPORTED_TARGET hdf5)
if(DAQFLOW_TESTS)
  find_package(GTest REQUIRED)
endif()

# Optional transport libraries. A transport whose library is missing is left out of the build
# and listed as not built (transports_not_built(), `daqflow transports`); the conformance suite
# has a test that fails when DAQFLOW_REQUIRE_ALL_TRANSPORTS is on and one is missing.
option(DAQFLOW_REQUIRE_ALL_TRANSPORTS "Fail configuration when a transport library is missing" ON)
# supervisord's XML-RPC API, for the supervisor launcher: xmlrpc-c's C++ client.
find_program(XMLRPC_C_CONFIG xmlrpc-c-config REQUIRED)
execute_process(COMMAND ${XMLRPC_C_CONFIG} c++2 client --libs OUTPUT_VARIABLE XMLRPC_C_LIBS
                OUTPUT_STRIP_TRAILING_WHITESPACE COMMAND_ERROR_IS_FATAL ANY)
separate_arguments(XMLRPC_C_LIBS UNIX_COMMAND "${XMLRPC_C_LIBS}")
add_library(daqflow_xmlrpc INTERFACE)
target_link_libraries(daqflow_xmlrpc INTERFACE ${XMLRPC_C_LIBS})
pkg_check_modules(UCX IMPORTED_TARGET ucx)
pkg_check_modules(LIBFABRIC IMPORTED_TARGET libfabric)
pkg_check_modules(MPI IMPORTED_TARGET ompi-c)  # Open MPI
# SimGrid: the sim transport and `daqflow sim` (src/sim/).
pkg_check_modules(SIMGRID IMPORTED_TARGET simgrid)
# ZeroMQ: only the small-message reference program of `daqflow bench compare` links it.
pkg_check_modules(ZMQ IMPORTED_TARGET libzmq)
if(DAQFLOW_REQUIRE_ALL_TRANSPORTS)
  foreach(lib UCX LIBFABRIC MPI SIMGRID)
    if(NOT ${lib}_FOUND)
      message(FATAL_ERROR "${lib} not found: run scripts/bootstrap, or configure with "
                          "-DDAQFLOW_REQUIRE_ALL_TRANSPORTS=OFF to build without it")
    endif()
  endforeach()
endif()
if(DAQFLOW_TSAN)
  # SimGrid switches between its actors' stacks itself, which ThreadSanitizer cannot follow, and
  # its headers use fences that TSan refuses: the TSan tree leaves the simulator out.
  set(SIMGRID_FOUND FALSE)
endif()

# The generator of the settings specs (cmake/settings_spec.py) needs a python3 with PyYAML:
# Debian's (python3-yaml, installed by scripts/bootstrap) before any other on PATH.
find_program(DAQFLOW_PYTHON python3 PATHS /usr/bin NO_DEFAULT_PATH)
if(NOT DAQFLOW_PYTHON)
  find_program(DAQFLOW_PYTHON python3 REQUIRED)
endif()
execute_process(COMMAND ${DAQFLOW_PYTHON} -c "import yaml" RESULT_VARIABLE yaml_missing
                OUTPUT_QUIET ERROR_QUIET)
if(yaml_missing)
  message(FATAL_ERROR "${DAQFLOW_PYTHON} has no PyYAML (apt install python3-yaml)")
endif()
