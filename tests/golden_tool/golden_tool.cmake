# cact-golden, cact-inspect --diff and the conventions every tool keeps
# (--version, "-", stdout errors, exit codes): tests that run the built tools.
cact_test_suite(golden_tool
  SOURCES bits_meaning_test.cpp conventions_test.cpp golden_check_test.cpp inspect_diff_test.cpp
  DEPS cact_model nlohmann_json::nlohmann_json)
if(TARGET test_golden_tool AND CACT_APPS)
  add_dependencies(test_golden_tool cact-inspect cact-build cact-quant cact-run cact-slice cact-golden cact-serve)
endif()
if(TARGET test_golden_tool AND TARGET cact_tool_docs)
  add_dependencies(test_golden_tool cact_tool_docs)  # completions and man pages are checked too
endif()
