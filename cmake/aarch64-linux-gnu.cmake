# Cross toolchain: Linux/aarch64 with Debian's aarch64-linux-gnu GCC
# (package g++-aarch64-linux-gnu). Executables are linked statically so that
# qemu-user runs them without a target sysroot; ctest runs them through
# `qemu-aarch64 -cpu max` (every optional extension, dot product included).
# Used by scripts/test_aarch64.sh with -DCACT_CROSS_SCOPE=engine.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

set(CMAKE_EXE_LINKER_FLAGS_INIT "-static")
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -cpu max)

# doctest and nlohmann-json are header-only and architecture-neutral: use the
# build host's copies through shim packages that expose only their own header
# directory (never the host's whole /usr/include) to the cross compiler.
if(NOT DEFINED doctest_DIR)
  set(doctest_DIR "${CMAKE_CURRENT_LIST_DIR}/host-doctest" CACHE PATH "doctest package (host header-only shim)")
endif()
if(NOT DEFINED nlohmann_json_DIR)
  set(nlohmann_json_DIR "${CMAKE_CURRENT_LIST_DIR}/host-nlohmann_json" CACHE PATH "nlohmann-json package (host header-only shim)")
endif()
