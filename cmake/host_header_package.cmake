# Header-only packages for cross builds (cmake/aarch64-linux-gnu.cmake): the
# build host's copy, exposed as an imported target through a directory that
# holds nothing but a link to the one header directory (never the host's whole
# /usr/include, whose system headers would shadow the target's).
#   cact_host_header_package(<package> <header dir> <a header in it> <target> <Debian package>)
# Sets <package>_FOUND (and the NOT_FOUND message) in the caller's scope.
macro(cact_host_header_package package dir header target debian)
  if(NOT TARGET ${target})
    find_path(_cact_host_include ${dir}/${header}
              PATHS /usr/include /usr/local/include NO_DEFAULT_PATH NO_CMAKE_FIND_ROOT_PATH)
    if(NOT _cact_host_include)
      set(${package}_FOUND FALSE)
      set(${package}_NOT_FOUND_MESSAGE "${dir}/${header} not found on the build host (install ${debian})")
      unset(_cact_host_include CACHE)
      return()
    endif()
    set(_cact_shim "${CMAKE_BINARY_DIR}/host-${package}/include")
    file(MAKE_DIRECTORY "${_cact_shim}")
    file(CREATE_LINK "${_cact_host_include}/${dir}" "${_cact_shim}/${dir}" SYMBOLIC)
    add_library(${target} INTERFACE IMPORTED)
    set_target_properties(${target} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_cact_shim}")
    unset(_cact_shim)
    unset(_cact_host_include CACHE)
  endif()
  set(${package}_FOUND TRUE)
endmacro()
