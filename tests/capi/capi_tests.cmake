# The C API's tests beside the doctest suite `capi` (included by tests/CMakeLists.txt).
if(NOT TARGET test_capi)
  return()
endif()
target_include_directories(test_capi PRIVATE ${PROJECT_SOURCE_DIR}/libcact/src)  # chat/render.h, to compare with
target_compile_definitions(test_capi PRIVATE CACT_LIBRARY_FILE="$<TARGET_FILE:cact_shared>"
                                             CACT_C_HEADER="${PROJECT_SOURCE_DIR}/libcact/include/cact/cact.h")
set(capi_dir ${CMAKE_CURRENT_SOURCE_DIR}/capi)
set(capi_model ${PROJECT_SOURCE_DIR}/models/tools/tools-tiny.cact)
set(capi_tools ${PROJECT_SOURCE_DIR}/models/tools/tools.json)

# These run the library outside a test process of ours (an install, python3),
# where a sanitizer's runtime would have to come first: plain builds only.
if(NOT CACT_SANITIZE AND NOT CACT_TSAN AND NOT CACT_FUZZ)
  # Install to a temporary prefix; build examples/c against it with find_package and with pkg-config; run them.
  add_test(NAME capi_install COMMAND ${capi_dir}/install_test.sh ${CMAKE_COMMAND} ${PROJECT_BINARY_DIR}
                                     ${PROJECT_SOURCE_DIR} ${CMAKE_C_COMPILER} ${CMAKE_CXX_COMPILER})
  set_tests_properties(capi_install PROPERTIES TIMEOUT 300)
  # The ctypes example gives cact-run's answers.
  find_package(Python3 COMPONENTS Interpreter)
  if(Python3_FOUND AND CACT_APPS)
    add_test(NAME capi_python_vs_cact_run
             COMMAND ${Python3_EXECUTABLE} ${capi_dir}/python_vs_cact_run.py --lib $<TARGET_FILE:cact_shared>
                     --cact-run $<TARGET_FILE:cact-run> --example ${PROJECT_SOURCE_DIR}/examples/python/chat.py
                     --model ${capi_model} --tools ${capi_tools})
    set_tests_properties(capi_python_vs_cact_run PROPERTIES TIMEOUT 120)
  endif()
  # The size budget of the optimised library (bench/size.sh). Off by default while
  # the x86-64 figure is over it (docs/API.md "Size"); .ci/run prints the figure.
  option(CACT_CHECK_SIZE "ctest capi_size: fail when libcact.so is over its 1 MB budget" OFF)
  if(CACT_CHECK_SIZE AND CMAKE_BUILD_TYPE MATCHES "^(Release|MinSizeRel)$")
    add_test(NAME capi_size COMMAND ${PROJECT_SOURCE_DIR}/bench/size.sh $<TARGET_FILE:cact_shared>)
  endif()
endif()
