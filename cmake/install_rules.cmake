# What `cmake --install` puts where (docs/packaging.md), in two components that become the two Debian packages
# (cmake/debian_package.cmake): `runtime` (the canopy CLI, libcanopy.so.0) and `dev` (the public headers under
# include/canopy/, the libcanopy.so link, lib/cmake/Canopy/ with the Canopy::canopy target, lib/pkgconfig/canopy.pc).
# Topologies and templates are compiled into the library: there are no data files to install or find.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# The public headers: canopy.hpp and exactly the headers it includes, directly or not (the installed_headers ctests
# check both ways). None includes Boost, LLVM/Clang, fmt, nlohmann-json or the CUDA driver API (cuda.h): an
# application needs only these and the CUDA runtime headers. Paths are relative to the source root, and keep that
# shape under include/canopy/, so that their `#include "core/..."` lines resolve there as they do in this tree.
set(CANOPY_PUBLIC_HEADERS
    canopy.hpp
    core/byte_size.hpp core/collective.hpp core/data_type.hpp core/error.hpp core/logger.hpp core/status.hpp
    topology/shipped_topologies.hpp topology/topo_reader.hpp topology/topo_writer.hpp topology/topology.hpp
    topology/topology_dot.hpp topology/topology_subset.hpp topology/topology_table.hpp
    dsl/algorithm.hpp
    planner/plan.hpp planner/plan_eval.hpp planner/plan_json.hpp planner/planner.hpp planner/ring_baseline.hpp
    codegen/codegen_options.hpp codegen/generate.hpp codegen/kernel_source.hpp codegen/lower.hpp codegen/schedule.hpp
    codegen/source_file.hpp
    runtime/call/collective_call.hpp runtime/call/point_to_point.hpp
    runtime/comm/collective_spec.hpp runtime/comm/communicator.hpp runtime/comm/communicator_options.hpp
    runtime/cuda/device_limits.hpp runtime/cuda/driver_api.hpp
    runtime/detect/detect_topology.hpp runtime/detect/machine_facts.hpp runtime/detect/topology_from_facts.hpp
    runtime/jit/build.hpp runtime/jit/disk_cache.hpp runtime/jit/jit.hpp runtime/jit/nvrtc_compiler.hpp
    runtime/protocol/protocol_choice.hpp
    runtime/transport/bootstrap/bootstrap_options.hpp runtime/transport/bootstrap/socket_address.hpp
    runtime/transport/bootstrap/unique_id.hpp)
set(CANOPY_GENERATED_PUBLIC_HEADERS core/version.hpp)  # written into ${CANOPY_GENERATED_DIR} by configure_file
set(CANOPY_INSTALL_INCLUDEDIR ${CMAKE_INSTALL_INCLUDEDIR}/canopy)
set(CANOPY_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/Canopy)

foreach(header IN LISTS CANOPY_PUBLIC_HEADERS)
  get_filename_component(folder ${header} DIRECTORY)
  install(FILES ${header} DESTINATION ${CANOPY_INSTALL_INCLUDEDIR}/${folder} COMPONENT dev)
endforeach()
foreach(header IN LISTS CANOPY_GENERATED_PUBLIC_HEADERS)
  get_filename_component(folder ${header} DIRECTORY)
  install(FILES ${CANOPY_GENERATED_DIR}/${header} DESTINATION ${CANOPY_INSTALL_INCLUDEDIR}/${folder} COMPONENT dev)
endforeach()

# The library: libcanopy.so.MAJOR.MINOR.PATCH and its SONAME link libcanopy.so.MAJOR at run time, the bare
# libcanopy.so link (what -lcanopy finds) with the headers.
target_include_directories(canopy INTERFACE $<INSTALL_INTERFACE:${CANOPY_INSTALL_INCLUDEDIR}>)
install(TARGETS canopy EXPORT CanopyTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT dev)
# The CLI finds the library beside it, wherever the prefix is (a temporary one, /usr from the package).
set_target_properties(canopy_cli PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
install(TARGETS canopy_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)

# The NCCL-API library (nccl/, docs/nccl-api.md) goes to ${CMAKE_INSTALL_LIBDIR}/canopy/ as libcanopy_nccl.so and
# the link libnccl.so.2 (its SONAME) to it, in the runtime component: a folder of its own that no loader searches, so
# it never shadows the system's NCCL unless a user points LD_PRELOAD or LD_LIBRARY_PATH at it. Its RPATH
# ($ORIGIN/..) finds libcanopy.so.0 one folder up.
set(CANOPY_INSTALL_NCCL_DIR ${CMAKE_INSTALL_LIBDIR}/canopy)
install(TARGETS canopy_nccl LIBRARY DESTINATION ${CANOPY_INSTALL_NCCL_DIR} COMPONENT runtime)
install(CODE "file(CREATE_LINK libcanopy_nccl.so
                   \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CANOPY_INSTALL_NCCL_DIR}/libnccl.so.2\" SYMBOLIC)"
        COMPONENT runtime)

# find_package(Canopy CONFIG): CanopyConfig.cmake finds the CUDA toolkit (Canopy::canopy links CUDA::cudart, whose
# types the headers use), then loads the exported target; CanopyConfigVersion.cmake accepts requests of the same
# major version.
install(EXPORT CanopyTargets NAMESPACE Canopy:: DESTINATION ${CANOPY_INSTALL_CMAKEDIR} COMPONENT dev)
get_filename_component(CANOPY_CUDA_ROOT "${CUDAToolkit_BIN_DIR}" DIRECTORY)  # the toolkit's root, for the hint
configure_package_config_file(cmake/CanopyConfig.cmake.in ${CMAKE_BINARY_DIR}/CanopyConfig.cmake
                              INSTALL_DESTINATION ${CANOPY_INSTALL_CMAKEDIR})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/CanopyConfigVersion.cmake COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_BINARY_DIR}/CanopyConfig.cmake ${CMAKE_BINARY_DIR}/CanopyConfigVersion.cmake
        DESTINATION ${CANOPY_INSTALL_CMAKEDIR} COMPONENT dev)

# pkg-config: canopy.pc, relocatable (its prefix is found from its own folder), naming the CUDA runtime's headers
# and library where this build found them.
list(TRANSFORM CUDAToolkit_INCLUDE_DIRS PREPEND "-I" OUTPUT_VARIABLE CANOPY_PC_CUDA_CFLAGS)
list(JOIN CANOPY_PC_CUDA_CFLAGS " " CANOPY_PC_CUDA_CFLAGS)
get_filename_component(CANOPY_PC_CUDA_LIBDIR "${CUDA_cudart_LIBRARY}" DIRECTORY)
file(RELATIVE_PATH CANOPY_PC_PREFIX_FROM_PCFILEDIR ${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig
     ${CMAKE_INSTALL_PREFIX})
string(REGEX REPLACE "/$" "" CANOPY_PC_PREFIX_FROM_PCFILEDIR "${CANOPY_PC_PREFIX_FROM_PCFILEDIR}")
configure_file(cmake/canopy.pc.in ${CMAKE_BINARY_DIR}/canopy.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/canopy.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)
