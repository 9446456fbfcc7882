# CPack: the Debian packages `cpack` (run in the build folder) writes from the install components of
# cmake/install_rules.cmake: canopy_VERSION_amd64.deb (component runtime: the CLI and libcanopy.so.0) and
# canopy-dev_VERSION_amd64.deb (component dev: headers, CMake package, pkg-config), both installing under /usr.
# The runtime package's Depends are the Debian packages that hold the libraries it links, found by dpkg-shlibdeps;
# the CUDA 13 runtime (libcudart, libnvrtc) comes from the toolkit at /usr/local/cuda, which no Debian package holds
# there, so it is a requirement the packages state in their description rather than a dependency.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME canopy)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)  # as Debian ships binaries; the build folder keeps the debug information
set(CANOPY_PACKAGE_MAINTAINER "Canopy developers <canopy@invalid>"
    CACHE STRING "The Maintainer field of the Debian packages")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${CANOPY_PACKAGE_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # NAME_VERSION_ARCH.deb

set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL runtime dev)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME canopy)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SHLIBDEPS ON)
# Descriptions: a summary line, then lines of at most 80 characters (CPack indents them as Debian wants).
set(CPACK_DEBIAN_RUNTIME_DESCRIPTION "Topology-aware GPU collectives: the canopy CLI and libcanopy
Canopy plans spanning trees over any GPU interconnect and JIT-compiles their
CUDA kernels (broadcast, reduce, allreduce, allgather, reduce-scatter).
It needs the CUDA 13 runtime libraries (libcudart, libnvrtc) of the CUDA
toolkit, found by the dynamic loader; no GPU is needed to plan and compile.")
set(CPACK_DEBIAN_DEV_PACKAGE_NAME canopy-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "canopy (= ${PROJECT_VERSION})")
set(CPACK_DEBIAN_DEV_DESCRIPTION "Topology-aware GPU collectives: headers, CMake package, pkg-config file
Build applications on libcanopy: find_package(Canopy CONFIG) gives the
Canopy::canopy target, pkg-config the flags of canopy.pc. The headers need
C++20 and the CUDA 13 runtime headers (cuda_runtime_api.h) only.")
include(CPack)
