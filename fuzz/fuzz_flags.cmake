# Included by the top-level CMakeLists.txt when CACT_FUZZ is ON, before any
# target is made: every library and test is instrumented for libFuzzer's
# coverage feedback and built with ASan + UBSan (UB aborts). Needs clang.
if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "CACT_FUZZ needs clang (configure with CXX=clang++); see scripts/fuzz.sh")
endif()
add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g)
add_link_options(-fsanitize=address,undefined)
# clang's warning set differs from gcc's; a clang-only warning in another
# layer must not stop the fuzz build (the normal gcc build keeps -Werror).
set(CACT_WERROR OFF)
