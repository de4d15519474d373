# Lists the symbols of tx that libtx_http.so leaves undefined, for tx's link (CMakeLists.txt):
#   EXTERNS  a linker script of EXTERN(...): pulls them in from tx's static libraries, which would
#            otherwise leave out what only the module calls;
#   EXPORTS  a --dynamic-list: puts them, and only them, in tx's dynamic symbol table.
# A symbol of tx is one whose name is nested in namespace tx (a function, a vtable, a typeinfo,
# or a template of another namespace instantiated on a type of tx); the module's other undefined
# symbols come from the libraries it links itself.
#   cmake -DNM=nm -DMODULE=libtx_http.so -DEXTERNS=out.ld -DEXPORTS=out.list -P this
foreach(var NM MODULE EXTERNS EXPORTS)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "http_module_symbols.cmake: -D${var}= is required")
  endif()
endforeach()

execute_process(COMMAND ${NM} -D --undefined-only --format=just-symbols ${MODULE}
                OUTPUT_VARIABLE text RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${NM} could not read ${MODULE}")
endif()
# Mangled names hold letters, digits, '_', '.' and '@' only: safe as a CMake list.
string(REPLACE "\n" ";" symbols "${text}")

set(externs "")
set(exports "")
set(count 0)
foreach(symbol ${symbols})
  # A name nested in namespace tx: N, its qualifiers, then the first component "2tx".
  if(symbol MATCHES "N[rVKRO]*2tx[0-9]")
    string(APPEND externs "  ${symbol}\n")
    string(APPEND exports "  ${symbol};\n")
    math(EXPR count "${count} + 1")
  endif()
endforeach()
if(count EQUAL 0)
  message(FATAL_ERROR "${MODULE} calls no symbol of tx: not the module this script expects")
endif()
file(WRITE ${EXTERNS} "EXTERN(\n${externs})\n")
file(WRITE ${EXPORTS} "{\n${exports}};\n")
