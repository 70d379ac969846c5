# Install and export rules: an integrator's `find_package(TempoKV)` finds TempoKV::client (the
# tempokvd client, include/tempokv/client.h) with what it links: TempoKV::protocol, ::common and
# ::executor. The export set holds only these, so a client that linked the daemon, controller,
# store or provider would fail here at configure time (install(EXPORT) names the missing target).
# Components: `client` (libraries, public headers, CMake package), `daemon` (tempokvd and the
# tempokv CLI). tests/consumer builds against an installed `client` component.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(TEMPOKV_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/TempoKV)
set_target_properties(tempokv_common PROPERTIES EXPORT_NAME common)
set_target_properties(tempokv_executor PROPERTIES EXPORT_NAME executor)
set_target_properties(tempokv_protocol PROPERTIES EXPORT_NAME protocol)
set_target_properties(tempokv_client PROPERTIES EXPORT_NAME client)

install(TARGETS tempokv_common tempokv_executor tempokv_protocol tempokv_client
        EXPORT TempoKVTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT client
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT client
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/tempokv
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT client)
install(EXPORT TempoKVTargets NAMESPACE TempoKV:: DESTINATION ${TEMPOKV_CMAKE_DIR}
        COMPONENT client)

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/TempoKVConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/TempoKVConfig.cmake
                              INSTALL_DESTINATION ${TEMPOKV_CMAKE_DIR})
# 0.x: a minor version may change the API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/TempoKVConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/TempoKVConfig.cmake
              ${PROJECT_BINARY_DIR}/TempoKVConfigVersion.cmake
        DESTINATION ${TEMPOKV_CMAKE_DIR} COMPONENT client)

install(TARGETS tempokvd tempokv_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT daemon)
