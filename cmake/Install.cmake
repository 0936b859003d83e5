# What `cmake --install` puts where, and the Debian packages CPack builds from it (docs/install.md).
#
# Two components, one package each:
#   cli        trainlock (bin/), its bash, zsh and fish completions, the docs. Everything a node
#              gate, a CI job or an operator's workstation needs: Debian 12's toml++, yaml-cpp,
#              libcurl and OpenSSL, nothing of LibTorch.
#   validator  trainlock-validate (bin/), which links LibTorch (Debian's libtorch1.13 in a CPU
#              build; a CUDA build keeps the path of the LibTorch it was built against).
# The catalog, the image templates and the Python engines are compiled into the binaries, so
# the binaries are the whole product. The images carry the same two binaries at
# /usr/local/bin (images/Containerfile.in), where `cmake --install --prefix /usr/local` puts them.
#
#   cmake --install build --prefix /usr/local                  # both
#   cmake --install build --component cli                      # the CLI alone
#   cpack --config build/CPackConfig.cmake -G DEB -B build/package
#     -> build/package/trainlock_<version>_<arch>.deb, trainlock-validate_<version>_<arch>.deb

include(GNUInstallDirs)

if(TARGET trainlock)
  install(TARGETS trainlock RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT cli)
  # The completion scripts src/CMakeLists.txt writes beside the binary when it is linked.
  set(_completions ${CMAKE_BINARY_DIR}/completions)
  install(FILES ${_completions}/trainlock
          DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions COMPONENT cli)
  install(FILES ${_completions}/_trainlock
          DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions COMPONENT cli)
  install(FILES ${_completions}/trainlock.fish
          DESTINATION ${CMAKE_INSTALL_DATADIR}/fish/vendor_completions.d COMPONENT cli)
  install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT cli)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs
          COMPONENT cli FILES_MATCHING PATTERN "*.md")
endif()

if(TARGET trainlock-validate)
  # A LibTorch outside the system's library directories (a pip wheel's) stays found once
  # installed; Debian's needs no run path.
  set_target_properties(trainlock-validate PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
  install(TARGETS trainlock-validate RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
          COMPONENT validator)
endif()

# The Debian packages. Their dependencies are what dpkg-shlibdeps (dpkg-dev) finds in the
# binaries: each library package at the version this machine built against or later.
set(CPACK_PACKAGE_NAME trainlock)
set(CPACK_PACKAGE_VENDOR "trainlock")
set(CPACK_PACKAGE_CONTACT "trainlock maintainers <trainlock@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "Reproducible PyTorch training runs, proven on the node before the long run")
set(CPACK_PACKAGE_INSTALL_DIRECTORY trainlock)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_GENERATOR DEB)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL cli)
if(TARGET trainlock-validate)
  list(APPEND CPACK_COMPONENTS_ALL validator)
endif()
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_CLI_PACKAGE_NAME trainlock)
set(CPACK_DEBIAN_CLI_DESCRIPTION
    "trainlock: lock, check, image build, report, sign and gate a training run
 The CLI: pins a training run's models, datasets, dependencies and images in a
 lockfile, generates CUDA, ROCm and CPU images from it, and gates schedulers and
 CI on the signed report trainlock-validate writes on each node.")
set(CPACK_DEBIAN_VALIDATOR_PACKAGE_NAME trainlock-validate)
set(CPACK_DEBIAN_VALIDATOR_DESCRIPTION
    "trainlock-validate: validates a node for a locked training run
 Checks drivers, architectures, custom ops and collectives, then trains,
 checkpoints, kills, restores and resumes at the run's shape; writes the signed
 report trainlock gate decides on.")
include(CPack)
