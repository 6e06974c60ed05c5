# Every .cpp under libcact/src, apps and tests belongs to a target: source
# lists are explicit, and a file added to a folder but to no list would
# otherwise be silently left out of the build. Run at configure time on a
# full build with tests and apps (the other scopes leave folders out on purpose).

# The absolute paths of the sources of every target defined in `dir` and below.
function(_cact_listed_sources dir out)
  set(listed "")
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  foreach(target ${targets})
    get_target_property(sources ${target} SOURCES)
    get_target_property(source_dir ${target} SOURCE_DIR)
    foreach(source ${sources})
      if(source AND NOT source MATCHES "^\\$<")  # $<TARGET_OBJECTS:...> is another target's
        get_filename_component(path ${source} ABSOLUTE BASE_DIR ${source_dir})
        list(APPEND listed ${path})
      endif()
    endforeach()
  endforeach()
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(subdir ${subdirs})
    _cact_listed_sources(${subdir} below)
    list(APPEND listed ${below})
  endforeach()
  set(${out} ${listed} PARENT_SCOPE)
endfunction()

function(cact_check_sources_listed)
  _cact_listed_sources(${PROJECT_SOURCE_DIR} listed)
  # CONFIGURE_DEPENDS: a file added later re-runs this check at the next build.
  file(GLOB_RECURSE present CONFIGURE_DEPENDS RELATIVE ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/libcact/src/*.cpp
       ${PROJECT_SOURCE_DIR}/apps/*.cpp ${PROJECT_SOURCE_DIR}/tests/*.cpp)
  set(missing "")
  foreach(file ${present})
    if(NOT ${PROJECT_SOURCE_DIR}/${file} IN_LIST listed)
      string(APPEND missing "\n  ${file}")
    endif()
  endforeach()
  if(missing)
    message(FATAL_ERROR "Sources in no target's source list (libcact/CMakeLists.txt, apps/CMakeLists.txt, "
                        "tests/CMakeLists.txt):${missing}")
  endif()
endfunction()
