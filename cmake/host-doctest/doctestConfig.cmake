# doctest for cross builds: the build host's header-only copy (host_header_package.cmake).
include(${CMAKE_CURRENT_LIST_DIR}/../host_header_package.cmake)
cact_host_header_package(doctest doctest doctest.h doctest::doctest doctest-dev)
