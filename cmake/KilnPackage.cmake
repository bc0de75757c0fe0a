# Installation layout and the Debian package (CPack DEB): kiln (and kiln-model, which it runs), kiln-gui, a desktop entry and icon,
# the shared-MIME type of .kiln sessions, man pages made from --help, and the example models.
# scripts/package builds it; scripts/package-check installs it into a scratch root and runs it.
include(GNUInstallDirs)

install(TARGETS kiln RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS kiln-model RUNTIME DESTINATION ${KILN_MODEL_COMMANDS_DIR})  # app/CMakeLists.txt
if(TARGET kiln-nvrtc-worker)
  install(TARGETS kiln-nvrtc-worker RUNTIME DESTINATION ${KILN_MODEL_COMMANDS_DIR})  # beside kiln-model
endif()
install(DIRECTORY ${PROJECT_SOURCE_DIR}/resources/examples/ DESTINATION ${CMAKE_INSTALL_DATADIR}/kiln/examples)

set(KILN_MAN_DIR ${PROJECT_BINARY_DIR}/man)
set(KILN_CLI_SUBCOMMANDS "inspect;explain;compile;check;profile;report;trace;stats;import;diff")
add_custom_command(OUTPUT ${KILN_MAN_DIR}/kiln.1 ${KILN_MAN_DIR}/kiln.1.gz
  COMMAND ${CMAKE_COMMAND} -E make_directory ${KILN_MAN_DIR}
  COMMAND ${CMAKE_COMMAND} -DPROGRAM=$<TARGET_FILE:kiln> -DNAME=kiln -DVERSION=${PROJECT_VERSION}
          "-DSUMMARY=capture, compile and profile PyTorch models; inspect graph breaks, guards and kernels"
          "-DSUBCOMMANDS=${KILN_CLI_SUBCOMMANDS}" -DOUT=${KILN_MAN_DIR}/kiln.1
          -P ${PROJECT_SOURCE_DIR}/cmake/KilnManPage.cmake
  COMMAND gzip -9 -n -f -k ${KILN_MAN_DIR}/kiln.1
  DEPENDS kiln ${PROJECT_SOURCE_DIR}/cmake/KilnManPage.cmake
  VERBATIM)
set(KILN_MAN_PAGES ${KILN_MAN_DIR}/kiln.1.gz)

if(KILN_WITH_GUI)
  install(TARGETS kiln-gui RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  install(FILES ${PROJECT_SOURCE_DIR}/resources/desktop/kiln.desktop DESTINATION ${CMAKE_INSTALL_DATADIR}/applications)
  install(FILES ${PROJECT_SOURCE_DIR}/resources/desktop/kiln-mime.xml DESTINATION ${CMAKE_INSTALL_DATADIR}/mime/packages
          RENAME kiln.xml)
  install(FILES ${PROJECT_SOURCE_DIR}/resources/icons/kiln.svg
          DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/scalable/apps)
  add_custom_command(OUTPUT ${KILN_MAN_DIR}/kiln-gui.1 ${KILN_MAN_DIR}/kiln-gui.1.gz
    COMMAND ${CMAKE_COMMAND} -E make_directory ${KILN_MAN_DIR}
    COMMAND ${CMAKE_COMMAND} -DPROGRAM=$<TARGET_FILE:kiln-gui> -DNAME=kiln-gui -DVERSION=${PROJECT_VERSION}
            "-DSUMMARY=the Kiln workbench for compiled PyTorch models" -DOUT=${KILN_MAN_DIR}/kiln-gui.1
            -P ${PROJECT_SOURCE_DIR}/cmake/KilnManPage.cmake
    COMMAND gzip -9 -n -f -k ${KILN_MAN_DIR}/kiln-gui.1
    DEPENDS kiln-gui ${PROJECT_SOURCE_DIR}/cmake/KilnManPage.cmake
    VERBATIM)
  list(APPEND KILN_MAN_PAGES ${KILN_MAN_DIR}/kiln-gui.1.gz)
endif()
add_custom_target(kiln_man_pages ALL DEPENDS ${KILN_MAN_PAGES})
install(FILES ${KILN_MAN_PAGES} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME kiln)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "Kiln maintainers <kiln@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Workbench for profiling and debugging compiled PyTorch models")
set(CPACK_PACKAGE_DESCRIPTION
    "Kiln shows the graphs a compiler captured from a PyTorch model, every graph break with its reason and "
    "Python line, guards and recompiles, the generated kernels next to the graph nodes they came from, and "
    "timelines of eager against the compile modes. kiln is the headless command line; kiln-gui the workbench.")
set(CPACK_PACKAGE_INSTALL_DIRECTORY /usr)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # kiln_<version>_amd64.deb
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)  # Qt, LibTorch, Graphviz, SQLite, ... from the binaries themselves
# Generated CPU kernels are compiled with the system C++ compiler and OpenMP at run time; the
# workbench needs a Qt platform plugin (xcb, wayland) to open a window.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "g++, libgomp1, qt6-qpa-plugins")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "graphviz, shared-mime-info, desktop-file-utils")
include(CPack)
