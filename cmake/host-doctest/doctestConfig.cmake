# doctest for cross builds (cmake/aarch64-linux-gnu.cmake): the header-only
# library of the build host, exposed as doctest::doctest through a directory
# that holds nothing but a link to the host's doctest/ headers.
if(NOT TARGET doctest::doctest)
  find_path(CACT_HOST_DOCTEST_INCLUDE doctest/doctest.h
            PATHS /usr/include /usr/local/include NO_DEFAULT_PATH NO_CMAKE_FIND_ROOT_PATH)
  if(NOT CACT_HOST_DOCTEST_INCLUDE)
    set(doctest_FOUND FALSE)
    set(doctest_NOT_FOUND_MESSAGE "doctest/doctest.h not found on the build host (install doctest-dev)")
    return()
  endif()
  set(_cact_doctest_dir "${CMAKE_BINARY_DIR}/host-doctest/include")
  file(MAKE_DIRECTORY "${_cact_doctest_dir}")
  file(CREATE_LINK "${CACT_HOST_DOCTEST_INCLUDE}/doctest" "${_cact_doctest_dir}/doctest" SYMBOLIC)
  add_library(doctest::doctest INTERFACE IMPORTED)
  set_target_properties(doctest::doctest PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_cact_doctest_dir}")
  unset(_cact_doctest_dir)
endif()
set(doctest_FOUND TRUE)
