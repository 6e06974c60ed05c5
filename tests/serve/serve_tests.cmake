# cact-serve's tests (docs/SERVE.md "Tests"), included by tests/CMakeLists.txt: Python
# scripts start the built server on 127.0.0.1 (a free port), drive it over HTTP and
# stop it with SIGTERM; no server outlives its test (PR_SET_PDEATHSIG).
if(NOT CACT_APPS OR NOT CACT_EVERYTHING OR CACT_FUZZ)
  return()
endif()
find_package(Python3 COMPONENTS Interpreter REQUIRED)
set(serve_dir ${CMAKE_CURRENT_SOURCE_DIR}/serve)
if(CACT_SANITIZE OR CACT_TSAN)
  # The sanitized engine is several times slower, and ASan's quarantine keeps freed blocks
  # resident for a while (leaks are LeakSanitizer's to find there, not the RSS bound's).
  set(serve_conversations 30)
  set(serve_rss_bound_mib 96)
else()
  set(serve_conversations 100)
  set(serve_rss_bound_mib 8)
endif()

# Every endpoint and error shape, the request mapping, streaming, the prefix cache,
# expected.jsonl replayed (one and four clients), 503, a client that leaves, the API key, the drain.
add_test(NAME serve_endpoints
         COMMAND ${Python3_EXECUTABLE} ${serve_dir}/endpoints_test.py --server $<TARGET_FILE:cact-serve>
                 --conversations ${serve_conversations})
# 200 hostile requests (truncated, huge, nested 100000 deep, not UTF-8, wrong types, slow), then
# /health, the same answer as before, and an RSS flat within the bound.
add_test(NAME serve_hostile
         COMMAND ${Python3_EXECUTABLE} ${serve_dir}/hostile_test.py --server $<TARGET_FILE:cact-serve>
                 --rss-bound-mib ${serve_rss_bound_mib})
# The official openai npm package against the server; `npm install` (network) into this build dir.
add_test(NAME serve_openai_client
         COMMAND ${Python3_EXECUTABLE} ${serve_dir}/openai_client_test.py --server $<TARGET_FILE:cact-serve>
                 --work ${CMAKE_CURRENT_BINARY_DIR}/serve/openai_client)
# A ceiling, not a speed check: under the sanitizers the replay is many times slower.
set_tests_properties(serve_endpoints serve_hostile serve_openai_client PROPERTIES TIMEOUT 600)
