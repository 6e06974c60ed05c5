# `cmake --install`: the tools, libcact.so / libcact.a (+ libcact_tools.a), the
# headers, the bundled models under share/cact/, the CMake package
# (find_package(cact CONFIG): cact::cact, cact::cact_static, cact::tools) and
# cact.pc for pkg-config. Both package files are relocatable: they find the
# prefix from where they were installed. Layout: docs/API.md "Install".
if(NOT CACT_INSTALL OR NOT TARGET cact_shared)
  return()  # a consumer's add_subdirectory, or a kernels-only build (no library)
endif()
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)
set(cact_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/cact)

set(cact_installed_libraries cact_shared cact_static)
if(TARGET cact_tools)
  list(APPEND cact_installed_libraries cact_tools)
endif()
install(TARGETS ${cact_installed_libraries} EXPORT cactTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# Every header tier (docs/API.md "Headers"); the SentencePiece import is not
# installed (it needs libsentencepiece, which the installed libraries do not link).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/libcact/include/cact DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        PATTERN spm_import.h EXCLUDE)

if(CACT_EVERYTHING AND CACT_APPS)
  install(TARGETS cact-inspect cact-build cact-quant cact-run cact-slice cact-golden cact-serve RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
# Where cact-run looks for its bundled model and tool list (../share/cact from the executable).
install(FILES ${PROJECT_SOURCE_DIR}/models/tools/tools-tiny.cact ${PROJECT_SOURCE_DIR}/models/tools/tools.json
              ${PROJECT_SOURCE_DIR}/models/license-tiny.cact
        DESTINATION ${CMAKE_INSTALL_DATADIR}/cact)

install(EXPORT cactTargets NAMESPACE cact:: DESTINATION ${cact_cmake_dir})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/cactConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/cactConfig.cmake INSTALL_DESTINATION ${cact_cmake_dir})
# A new major version is a new ABI (and a new SONAME).
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cactConfigVersion.cmake COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cactConfig.cmake ${PROJECT_BINARY_DIR}/cactConfigVersion.cmake
        DESTINATION ${cact_cmake_dir})

set(cact_pc_dir ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
file(RELATIVE_PATH cact_pc_to_prefix /prefix/${cact_pc_dir} /prefix)
string(REGEX REPLACE "/$" "" cact_pc_to_prefix "${cact_pc_to_prefix}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/cact.pc.in ${PROJECT_BINARY_DIR}/cact.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/cact.pc DESTINATION ${cact_pc_dir})
