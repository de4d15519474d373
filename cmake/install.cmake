# What `cmake --install` puts under the prefix, and the .deb CPack makes of it (docs/operations.md,
# "Installing"): tx and tx-agent side by side (tx finds tx-agent beside itself), tx's HTTP module
# in LIBDIR/tx (tx finds it there, relative to itself), the man page and the shell completions that tx prints from its command table, the systemd
# units, an example config.toml and the documentation.
include(GNUInstallDirs)

install(TARGETS tx tx-agent RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS tx_http LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/tx)

# Made at install time by the tx just built, so that they never drift from its --help and a
# `cmake --build --target tx` is all an install needs; the units get the installed path
# of tx.
install(CODE "
  set(TX_EXE \"$<TARGET_FILE:tx>\")
  set(TX_SOURCE_DIR \"${CMAKE_SOURCE_DIR}\")
  set(TX_STAGING_DIR \"${CMAKE_BINARY_DIR}/install-generated\")
  set(TX_BINDIR_RELATIVE \"${CMAKE_INSTALL_BINDIR}\")
  include(\"${CMAKE_SOURCE_DIR}/cmake/install_generated.cmake\")
")

install(FILES examples/config.toml DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)
install(PROGRAMS examples/example-agent DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)
install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME tx)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "tx developers <tx@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "durable task queue and supervisor for fleets of AI coding agents")
set(CPACK_PACKAGE_DESCRIPTION
    "tx runs fleets of long-running workers, above all AI coding agents driven through their \
CLIs, over a durable task queue: leases with fencing tokens, heartbeats, recovery of dead \
workers, a supervised pool, a CLI, an HTTP API and a live dashboard. SQLite by default, \
PostgreSQL for fleets across machines.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
# The shared libraries tx links come from dpkg-shlibdeps; adduser makes the units' user. libpq is
# loaded only when a PostgreSQL store is opened (store/postgres/libpq.h), git only for tasks in a
# worktree, bubblewrap and podman only for sandboxes.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "git, libpq5, bubblewrap")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "podman | docker.io, postgresql-client, bash-completion")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA "${CMAKE_SOURCE_DIR}/packaging/deb/postinst")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
