# Installation rules and the Debian package (scripts/package; docs/install.md).
# `cmake --install build` (prefix /usr/local) or the .deb (prefix /usr) lays out:
#   bin/autonous                                   the binary
#   share/autonous/tokenizer/                      the tokenizer files (found beside the binary)
#   share/man/man1/autonous.1.gz                   the man page (help2man, from --help)
#   share/bash-completion/completions/autonous     bash completion
#   share/doc/autonous/                            README.md and docs/
#   lib/systemd/system/autonous.service            the hardened unit (ExecStart= this prefix's bin)
#   /etc/autonous/autonous.env                     the env example (0600; a conffile), written
#                                                  only where none is: an install keeps your edits
include(GNUInstallDirs)
# Installing (and CPack) builds nothing itself: scripts/package builds the binary and the man page
# first, not every test and benchmark of the tree.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)

# The tokenizer files scripts/bootstrap fetched and checked (SHA-256) at this machine.
set(AUTONOUS_TOKENIZER_SOURCE "/usr/local/share/autonous/tokenizer"
    CACHE PATH "Where the tokenizer files to install are")

set(AUTONOUS_MAN_PAGE ${PROJECT_BINARY_DIR}/autonous.1.gz)
find_program(HELP2MAN help2man)
if(HELP2MAN)
  add_custom_command(
    OUTPUT ${AUTONOUS_MAN_PAGE}
    COMMAND ${HELP2MAN} --no-info --section=1 --source=autonous
            "--name=chat-bot backend worker with context management"
            --include=${PROJECT_SOURCE_DIR}/cmake/debian/autonous.h2m
            -o ${PROJECT_BINARY_DIR}/autonous.1 $<TARGET_FILE:autonous>
    COMMAND gzip -9nf ${PROJECT_BINARY_DIR}/autonous.1
    DEPENDS autonous ${PROJECT_SOURCE_DIR}/cmake/debian/autonous.h2m
    COMMENT "autonous.1 (help2man)")
  add_custom_target(autonous_man ALL DEPENDS ${AUTONOUS_MAN_PAGE})
endif()

install(TARGETS autonous RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${AUTONOUS_TOKENIZER_SOURCE}/ DESTINATION ${CMAKE_INSTALL_DATADIR}/autonous/tokenizer
        FILE_PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ
        FILES_MATCHING PATTERN "*.tiktoken" PATTERN "*.tokenizer.json")
install(FILES ${AUTONOUS_MAN_PAGE} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 OPTIONAL)
install(FILES ${PROJECT_SOURCE_DIR}/config/autonous.bash-completion
        DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME autonous)
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs)
install(FILES ${PROJECT_SOURCE_DIR}/config/autonous.env.example DESTINATION ${CMAKE_INSTALL_DOCDIR})
# At install time (CPack installs with the prefix /usr into its staging folder): the unit's
# ExecStart= names this prefix's binary; the env file is written only where there is none.
install(CODE "
  set(root \"\$ENV{DESTDIR}\")
  file(READ \"${PROJECT_SOURCE_DIR}/config/autonous.service\" unit)
  string(REPLACE \"ExecStart=/usr/bin/autonous\" \"ExecStart=\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}/autonous\" unit \"\${unit}\")
  file(WRITE \"\${root}\${CMAKE_INSTALL_PREFIX}/lib/systemd/system/autonous.service\" \"\${unit}\")
  file(CHMOD \"\${root}\${CMAKE_INSTALL_PREFIX}/lib/systemd/system/autonous.service\"
       PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
  message(STATUS \"Installing: \${root}\${CMAKE_INSTALL_PREFIX}/lib/systemd/system/autonous.service\")
  if(EXISTS \"\${root}/etc/autonous/autonous.env\")
    message(STATUS \"Kept: \${root}/etc/autonous/autonous.env (the example is in share/doc/autonous)\")
  else()
    # (file(INSTALL) puts DESTDIR in front itself.)
    file(INSTALL \"${PROJECT_SOURCE_DIR}/config/autonous.env.example\" DESTINATION /etc/autonous
         RENAME autonous.env PERMISSIONS OWNER_READ OWNER_WRITE)
  endif()
")

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME autonous)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
# A build of a checkout is versioned by its commit (0.1.0+git412.1a2b3c4), so installing a newer
# build upgrades; scripts/package configures again to read it.
find_program(GIT git)
if(GIT AND EXISTS ${PROJECT_SOURCE_DIR}/.git)
  execute_process(COMMAND ${GIT} -C ${PROJECT_SOURCE_DIR} rev-list --count HEAD
                  OUTPUT_VARIABLE commits OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  execute_process(COMMAND ${GIT} -C ${PROJECT_SOURCE_DIR} rev-parse --short=7 HEAD
                  OUTPUT_VARIABLE sha OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(commits AND sha)
    set(CPACK_DEBIAN_PACKAGE_VERSION "${PROJECT_VERSION}+git${commits}.${sha}")
  endif()
endif()
set(CPACK_PACKAGE_CONTACT "autonous maintainers <root@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "chat-bot backend worker with context management")
set(CPACK_PACKAGE_DESCRIPTION
    "Front ends queue user messages in SQLite or PostgreSQL; the worker builds each chat's\n\
LLM context within a token budget, calls an OpenAI-compatible endpoint, stores the reply\n\
and records every step as events.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser")  # postinst's system user; the libraries are added
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/cmake/debian/conffiles ${PROJECT_SOURCE_DIR}/cmake/debian/postinst
    ${PROJECT_SOURCE_DIR}/cmake/debian/prerm ${PROJECT_SOURCE_DIR}/cmake/debian/postrm)
set(CPACK_WARN_ON_ABSOLUTE_INSTALL_DESTINATION OFF)
include(CPack)
