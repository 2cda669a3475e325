# The installed SDK (`cmake --install build --prefix P`): the CLI, the shared libraries, the
# public headers, a CMake package (find_package(daqflow)) and a pkg-config file (daqflow.pc). Both
# are relocatable: a prefix can be moved or installed with --prefix elsewhere than configured.
include(CMakePackageConfigHelpers)

# Every layer of the SDK; daqflow::daqflow is the applications and the control client with all
# below them.
add_library(daqflow_sdk INTERFACE)
set_target_properties(daqflow_sdk PROPERTIES EXPORT_NAME daqflow)
target_link_libraries(daqflow_sdk INTERFACE daqflow_apps daqflow_control)
add_library(daqflow::daqflow ALIAS daqflow_sdk)
# The headers alone: what a C plugin (readout_plugin.h, farm_plugin.h) needs.
add_library(daqflow_headers INTERFACE)
set_target_properties(daqflow_headers PROPERTIES EXPORT_NAME headers)
target_include_directories(daqflow_headers INTERFACE
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
add_library(daqflow::headers ALIAS daqflow_headers)

install(TARGETS ${DAQFLOW_LAYERS} daqflow_sdk daqflow_headers EXPORT daqflowTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS daqflow RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/daqflow ${PROJECT_BINARY_DIR}/include/daqflow
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

set(package_dir ${CMAKE_INSTALL_LIBDIR}/cmake/daqflow)
install(EXPORT daqflowTargets NAMESPACE daqflow:: DESTINATION ${package_dir})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/daqflowConfig.cmake.in
  ${PROJECT_BINARY_DIR}/daqflowConfig.cmake INSTALL_DESTINATION ${package_dir})
# A library built on daqflow is tied to its minor version (application types: also to its
# compiler and standard library, checked when loaded).
write_basic_package_version_file(${PROJECT_BINARY_DIR}/daqflowConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/daqflowConfig.cmake
  ${PROJECT_BINARY_DIR}/daqflowConfigVersion.cmake DESTINATION ${package_dir})

configure_file(${PROJECT_SOURCE_DIR}/cmake/daqflow.pc.in ${PROJECT_BINARY_DIR}/daqflow.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/daqflow.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
