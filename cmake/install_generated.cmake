# Run by `cmake --install` (cmake/install.cmake): the man page and the completions from the tx
# just built, the systemd units with the installed path of tx. CMAKE_INSTALL_PREFIX is the
# prefix of this install (cpack's /usr included); file(INSTALL) adds $DESTDIR.
file(MAKE_DIRECTORY "${TX_STAGING_DIR}/completions")

function(tx_generate out)
  execute_process(COMMAND "${TX_EXE}" ${ARGN} OUTPUT_FILE "${out}" RESULT_VARIABLE rc
                  ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "tx ${ARGN} failed (${rc}): ${err}")
  endif()
endfunction()

# Run where no store or agent is near: neither is read, but a TX_* of the shell must not be.
set(ENV{TX_ALLOWED_COMMANDS} "")
tx_generate("${TX_STAGING_DIR}/tx.1" man)
tx_generate("${TX_STAGING_DIR}/completions/tx" completion bash)
tx_generate("${TX_STAGING_DIR}/completions/_tx" completion zsh)
tx_generate("${TX_STAGING_DIR}/completions/tx.fish" completion fish)

if(IS_ABSOLUTE "${TX_BINDIR_RELATIVE}")
  set(TX_BINDIR "${TX_BINDIR_RELATIVE}")
else()
  set(TX_BINDIR "${CMAKE_INSTALL_PREFIX}/${TX_BINDIR_RELATIVE}")
endif()
foreach(unit system user)
  if(unit STREQUAL system)
    set(src "${TX_SOURCE_DIR}/packaging/systemd/tx-orchestrator@.service")
  else()
    set(src "${TX_SOURCE_DIR}/packaging/systemd/user/tx-orchestrator@.service")
  endif()
  file(MAKE_DIRECTORY "${TX_STAGING_DIR}/systemd/${unit}")
  configure_file("${src}" "${TX_STAGING_DIR}/systemd/${unit}/tx-orchestrator@.service" @ONLY)
  file(INSTALL "${TX_STAGING_DIR}/systemd/${unit}/tx-orchestrator@.service"
       DESTINATION "${CMAKE_INSTALL_PREFIX}/lib/systemd/${unit}")
endforeach()

file(INSTALL "${TX_STAGING_DIR}/tx.1" DESTINATION "${CMAKE_INSTALL_PREFIX}/share/man/man1")
file(INSTALL "${TX_STAGING_DIR}/completions/tx"
     DESTINATION "${CMAKE_INSTALL_PREFIX}/share/bash-completion/completions")
file(INSTALL "${TX_STAGING_DIR}/completions/_tx"
     DESTINATION "${CMAKE_INSTALL_PREFIX}/share/zsh/vendor-completions")
file(INSTALL "${TX_STAGING_DIR}/completions/tx.fish"
     DESTINATION "${CMAKE_INSTALL_PREFIX}/share/fish/vendor_completions.d")
