# The functions tx's common processes run (cmake/tx.functions, made by scripts/function_order),
# placed first in tx's text and side by side: TX_FUNCTION_ORDER_SCRIPT, a linker script that the
# link adds to the default one (INSERT), for objects compiled with -ffunction-sections.
#
# Why: the kernel maps a program's text 64 KB around each page it faults on, so functions run
# from all over the file make nearly all of it resident in every process. Side by side, an idle
# worker holds ~3.0 MB of tx's text instead of ~5.7 (docs/performance.md).
#
# Each function has a section of its own, .text.NAME; a constructor or destructor that the
# profile names as its complete-object symbol (C1, D1) is an alias of the base-object one (C2,
# D2), whose section it is; a static initialiser sits in .text.startup.NAME. A name that matches
# no section (renamed since the profile, or of a library not built with -ffunction-sections, as
# SQLite is) places nothing.
file(STRINGS ${CMAKE_SOURCE_DIR}/cmake/tx.functions tx_functions REGEX "^[^#]")
set(script "SECTIONS\n{\n  .text.tx_ordered :\n  {\n")
foreach(name ${tx_functions})
  string(APPEND script "    *(.text.${name})\n")
  if(name MATCHES "C1E")
    string(REPLACE "C1E" "C2E" base "${name}")
    string(APPEND script "    *(.text.${base})\n")
  elseif(name MATCHES "D1E")
    string(REPLACE "D1E" "D2E" base "${name}")
    string(APPEND script "    *(.text.${base})\n")
  elseif(name MATCHES "^_GLOBAL__sub_I_")
    string(APPEND script "    *(.text.startup.${name})\n")
  endif()
endforeach()
string(APPEND script "  }\n}\nINSERT BEFORE .text;\n")
set(TX_FUNCTION_ORDER_SCRIPT ${CMAKE_BINARY_DIR}/tx_function_order.ld)
# Rewritten only when it changes: tx relinks when it does (LINK_DEPENDS).
file(WRITE ${TX_FUNCTION_ORDER_SCRIPT}.new "${script}")
configure_file(${TX_FUNCTION_ORDER_SCRIPT}.new ${TX_FUNCTION_ORDER_SCRIPT} COPYONLY)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
             ${CMAKE_SOURCE_DIR}/cmake/tx.functions)
