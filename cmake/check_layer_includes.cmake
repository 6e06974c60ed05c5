# ctest layer_includes: a layer includes its own private headers, base's and the
# public ones (cact/...), never another layer's private headers: what one layer
# needs of another is that layer's public interface in libcact/include/cact/.
#   cmake -DSRC=<libcact/src> -P check_layer_includes.cmake
if(NOT SRC)
  message(FATAL_ERROR "check_layer_includes: pass -DSRC=<libcact/src>")
endif()
file(GLOB layers RELATIVE ${SRC} ${SRC}/*)
set(violations "")
foreach(layer ${layers})
  if(NOT IS_DIRECTORY ${SRC}/${layer})
    continue()
  endif()
  file(GLOB_RECURSE files RELATIVE ${SRC} ${SRC}/${layer}/*.h ${SRC}/${layer}/*.cpp)
  foreach(file ${files})
    file(STRINGS ${SRC}/${file} includes REGEX "^[ \t]*#[ \t]*include[ \t]+\"[^\"/]+/")
    foreach(line ${includes})
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]+\"([^\"/]+)/.*" "\\1" included "${line}")
      if(NOT included STREQUAL layer AND NOT included STREQUAL "base" AND NOT included STREQUAL "cact")
        string(APPEND violations "\n  libcact/src/${file}: ${line}")
      endif()
    endforeach()
  endforeach()
endforeach()
if(violations)
  message(FATAL_ERROR "Private headers of another layer (use its public header in libcact/include/cact/):"
                      "${violations}")
endif()
message(STATUS "layer_includes: every layer includes only its own, base's and public headers")
