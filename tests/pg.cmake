# A PostgreSQL 15 server for the tests that need one: the ctest fixture `pg`. pg_server_start
# runs scripts/pg_server (initdb into build/<type>/pg, loopback only, a free port) before the
# first test that requires the fixture, and pg_server_stop removes it after the last. Tests find
# the server's URL in the file $TX_TEST_PG_URL_FILE (tests/pg_test_db.h). Without a server they
# fail; nothing is skipped.
set(TX_PG_DIR ${CMAKE_BINARY_DIR}/pg)
add_test(NAME pg_server_start COMMAND ${CMAKE_SOURCE_DIR}/scripts/pg_server start ${TX_PG_DIR})
set_tests_properties(pg_server_start PROPERTIES FIXTURES_SETUP pg TIMEOUT 120)
add_test(NAME pg_server_stop COMMAND ${CMAKE_SOURCE_DIR}/scripts/pg_server stop ${TX_PG_DIR})
set_tests_properties(pg_server_stop PROPERTIES FIXTURES_CLEANUP pg TIMEOUT 120)
set(TX_PG_TEST_PROPERTIES FIXTURES_REQUIRED pg ENVIRONMENT TX_TEST_PG_URL_FILE=${TX_PG_DIR}/url)

find_package(PkgConfig REQUIRED)
pkg_check_modules(PQ REQUIRED IMPORTED_TARGET libpq)
