# ctest install_consumer: installs the `client` component of the build in BUILD_DIR under WORK_DIR,
# configures and builds tests/consumer (SOURCE_DIR) against it with find_package(TempoKV), and
# runs the consumer. cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DWORK_DIR=... -DCONFIG=...
#   -DGENERATOR=... -DCXX=... -P run.cmake
foreach(var BUILD_DIR SOURCE_DIR WORK_DIR GENERATOR CXX)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run.cmake: -D${var}= is missing")
  endif()
endforeach()

function(step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " shown "${ARGN}")
    message(FATAL_ERROR "install_consumer: '${shown}' failed (${rc})")
  endif()
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
set(consumer_build ${WORK_DIR}/build)
if(CONFIG)
  set(config_args --config ${CONFIG})
endif()
step(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix} --component client ${config_args})
# The consumer sees only the installed prefix: no source or build directory of TempoKV.
step(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${consumer_build} -G ${GENERATOR}
     -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_BUILD_TYPE=Debug -DCMAKE_PREFIX_PATH=${prefix})
step(${CMAKE_COMMAND} --build ${consumer_build})
step(${consumer_build}/consumer)
