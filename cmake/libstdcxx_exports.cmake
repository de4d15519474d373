# The C++ library as tx links it (CMakeLists.txt): its archive, TX_LIBSTDCXX_ARCHIVE, and a
# --dynamic-list of every symbol it defines, TX_LIBSTDCXX_EXPORTS.
#
# Why export them: a process that opens the HTTP module also loads libstdc++.so (cpp-httplib
# needs it). The dynamic loader looks a symbol up in the executable first, so with all of them
# exported every library's calls into the C++ library reach tx's copy, and no state of it (the
# exception in flight, the locale, the streams) is split between two copies. An unversioned
# definition in the executable satisfies a versioned reference (GLIBCXX_3.4.x), as a malloc of
# the executable's does glibc's.
execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libstdc++.a
                OUTPUT_VARIABLE TX_LIBSTDCXX_ARCHIVE OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT IS_ABSOLUTE "${TX_LIBSTDCXX_ARCHIVE}" OR NOT EXISTS "${TX_LIBSTDCXX_ARCHIVE}")
  message(FATAL_ERROR "libstdc++.a not found (${CMAKE_CXX_COMPILER} -print-file-name): "
                      "install the compiler's libstdc++ development package")
endif()
execute_process(COMMAND ${CMAKE_NM} -g --defined-only --format=just-symbols
                        ${TX_LIBSTDCXX_ARCHIVE}
                OUTPUT_VARIABLE text RESULT_VARIABLE rc ERROR_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${CMAKE_NM} could not read ${TX_LIBSTDCXX_ARCHIVE}")
endif()
# nm names each member ("name.o:") and parts them with blank lines; the rest are symbols.
string(REGEX REPLACE "[^\n]*:\n" "" text "${text}")
string(REGEX REPLACE "\n+" "\n" text "${text}")
string(STRIP "${text}" text)
string(REPLACE "\n" ";\n  " text "${text}")
set(TX_LIBSTDCXX_EXPORTS ${CMAKE_BINARY_DIR}/libstdcxx.exports)
file(WRITE ${TX_LIBSTDCXX_EXPORTS} "{\n  ${text};\n};\n")
