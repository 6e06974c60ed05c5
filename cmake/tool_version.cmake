# `--version` of the tools (apps/common/version.cpp): the project version and
# the git revision of the source tree, captured when the build is configured.
# Read-only git commands only (describe, diff-index): configuring never writes
# the repository's index. Outside a git checkout (a release tarball): "unknown".
set(cact_git_describe unknown)
find_package(Git QUIET)
if(GIT_FOUND AND EXISTS ${PROJECT_SOURCE_DIR}/.git)
  execute_process(COMMAND ${GIT_EXECUTABLE} describe --always --tags
                  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR} OUTPUT_VARIABLE _describe
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _describe_rc)
  if(_describe_rc EQUAL 0)
    set(cact_git_describe ${_describe})
    execute_process(COMMAND ${CMAKE_COMMAND} -E env GIT_OPTIONAL_LOCKS=0 ${GIT_EXECUTABLE} diff-index --quiet HEAD --
                    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR} RESULT_VARIABLE _dirty_rc OUTPUT_QUIET ERROR_QUIET)
    if(NOT _dirty_rc EQUAL 0)
      string(APPEND cact_git_describe "-dirty")
    endif()
  endif()
endif()
set_source_files_properties(${CMAKE_CURRENT_SOURCE_DIR}/common/version.cpp PROPERTIES COMPILE_DEFINITIONS
  "CACT_PROJECT_VERSION=\"${PROJECT_VERSION}\";CACT_GIT_DESCRIBE=\"${cact_git_describe}\"")
