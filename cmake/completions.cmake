# Shell completions (bash, zsh) and man pages of the tools, generated from each
# tool's own --help at build time (scripts/gen_completions.py), so they list
# exactly the flags the built tool has. Installed by `cmake --install`:
#   share/bash-completion/completions/<tool>, share/zsh/site-functions/_<tool>,
#   share/man/man1/<tool>.1
# Included from apps/CMakeLists.txt after the tools are declared.
find_package(Python3 REQUIRED COMPONENTS Interpreter)
set(cact_doc_tools cact-inspect cact-build cact-quant cact-slice cact-run cact-golden cact-serve)
set(cact_doc_dir ${PROJECT_BINARY_DIR}/share)
set(cact_doc_outputs)
foreach(tool ${cact_doc_tools})
  set(outputs ${cact_doc_dir}/bash/${tool} ${cact_doc_dir}/zsh/_${tool} ${cact_doc_dir}/man/${tool}.1)
  add_custom_command(OUTPUT ${outputs}
                     COMMAND Python3::Interpreter ${PROJECT_SOURCE_DIR}/scripts/gen_completions.py
                             --tool $<TARGET_FILE:${tool}> --name ${tool} --out-dir ${cact_doc_dir}
                     DEPENDS ${tool} ${PROJECT_SOURCE_DIR}/scripts/gen_completions.py
                     COMMENT "Completions and man page of ${tool}" VERBATIM)
  list(APPEND cact_doc_outputs ${outputs})
endforeach()
add_custom_target(cact_tool_docs ALL DEPENDS ${cact_doc_outputs})

if(CACT_INSTALL)
  include(GNUInstallDirs)
  foreach(tool ${cact_doc_tools})
    install(FILES ${cact_doc_dir}/bash/${tool} DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions)
    install(FILES ${cact_doc_dir}/zsh/_${tool} DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/site-functions)
    install(FILES ${cact_doc_dir}/man/${tool}.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
  endforeach()
endif()
