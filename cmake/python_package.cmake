# What the Python wheel holds (docs/python.md), as the `python` install component that scikit-build-core installs
# into the package folder (pyproject.toml: wheel.install-dir = "canopy", install.components = ["python"]):
#   _canopy.*.so and _canopy.pyi      the extension module and its stubs, beside the package's .py files
#   lib/libcanopy.so                  the library (unversioned in the wheel: a wheel holds no symbolic links)
#   lib/canopy/libcanopy_nccl.so      the NCCL-API library, under its own name only: nothing named libnccl.so.2 is in
#                                     the wheel and no loader searches its folder, so it never shadows the system's
#                                     NCCL unless asked (LD_PRELOAD by canopy.torchrun or by hand)
#   bin/canopy                        the CLI, which the `canopy` console script runs
# The RPATHs are those of the C++ install: the CLI and the module find lib/, the NCCL library one folder up.
include(GNUInstallDirs)
install(TARGETS _canopy LIBRARY DESTINATION . COMPONENT python)
install(FILES ${CMAKE_BINARY_DIR}/python/_canopy.pyi DESTINATION . COMPONENT python)
install(TARGETS canopy LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT python NAMELINK_SKIP)
install(TARGETS canopy_nccl LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/canopy COMPONENT python)
install(TARGETS canopy_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT python)
