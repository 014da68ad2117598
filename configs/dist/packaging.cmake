# packaging.cmake: what `make install` (cmake --install) puts beside the two binaries (their own
# install rules live with their targets), and the Debian package (`make deb`: CPack's DEB
# generator). Included from the top-level CMakeLists.txt.
#
# Layout (prefix /usr, as the Debian package has it; /usr/local by default):
#   bin/wampscope, bin/wampscope-ctl
#   share/man/man8/wampscope.8, share/man/man1/wampscope-ctl.1  (from man/*.in, with the version)
#   share/bash-completion/completions/wampscope-ctl
#   lib/systemd/system/wampscope.service
#   share/doc/wampscope/examples/low-port.conf    (drop-in for ports below 1024)
#   <sysconfdir>/wampscope/config.json            (/etc/wampscope with prefix /usr)
include(GNUInstallDirs)

set(RT_DIST_DIR ${CMAKE_CURRENT_LIST_DIR})
set(RT_FULL_BINDIR ${CMAKE_INSTALL_FULL_BINDIR})
set(RT_FULL_SYSCONFDIR ${CMAKE_INSTALL_FULL_SYSCONFDIR})
set(RT_FULL_DOCDIR ${CMAKE_INSTALL_FULL_DOCDIR})
configure_file(${RT_DIST_DIR}/wampscope.service.in ${PROJECT_BINARY_DIR}/dist/wampscope.service
               @ONLY)
configure_file(${RT_DIST_DIR}/debian/conffiles.in ${PROJECT_BINARY_DIR}/dist/conffiles @ONLY)

# The man pages carry the project's version.
configure_file(${RT_DIST_DIR}/man/wampscope.8.in ${PROJECT_BINARY_DIR}/dist/wampscope.8 @ONLY)
configure_file(${RT_DIST_DIR}/man/wampscope-ctl.1.in ${PROJECT_BINARY_DIR}/dist/wampscope-ctl.1 @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/dist/wampscope.8 DESTINATION ${CMAKE_INSTALL_MANDIR}/man8)
install(FILES ${PROJECT_BINARY_DIR}/dist/wampscope-ctl.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${RT_DIST_DIR}/wampscope-ctl.bash
        DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
        RENAME wampscope-ctl)
install(FILES ${PROJECT_BINARY_DIR}/dist/wampscope.service DESTINATION lib/systemd/system)
install(FILES ${RT_DIST_DIR}/low-port.conf DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)
# The example configuration: absolute, so that prefix /usr puts it in /etc (GNUInstallDirs).
install(FILES ${RT_DIST_DIR}/config.json DESTINATION ${RT_FULL_SYSCONFDIR}/wampscope)

# Debian package. Dependencies come from dpkg-shlibdeps; /etc/wampscope/config.json is a
# conffile (an edited one survives upgrades); the maintainer scripts reload systemd and restart
# a running router after an upgrade, never enable or start it on their own.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME wampscope)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "wampscope maintainers <wampscope@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "WAMP v2 router with built-in message tracing")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "wampscope routes WAMP v2 (WebSocket and RawSocket, JSON and MessagePack) and records
what flows through a realm: filtered, bounded, optionally persisted message traces,
driven by a management API and its command-line client wampscope-ctl.")
set(CPACK_SET_DESTDIR ON) # the absolute /etc destination lands inside the package
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${PROJECT_BINARY_DIR}/dist/conffiles ${RT_DIST_DIR}/debian/postinst
    ${RT_DIST_DIR}/debian/prerm ${RT_DIST_DIR}/debian/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
