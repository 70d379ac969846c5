# Third-party dependencies, all from Debian's packages (scripts/install-deps installs them).
find_package(Threads REQUIRED)
find_package(fmt REQUIRED)
find_package(nlohmann_json REQUIRED)
find_package(CLI11 REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(URING REQUIRED IMPORTED_TARGET liburing)
pkg_check_modules(XXHASH REQUIRED IMPORTED_TARGET libxxhash)
# ZeroMQ (libzmq3-dev; cppzmq-dev for the header-only <zmq.hpp>): tempokvd and its client.
pkg_check_modules(ZMQ REQUIRED IMPORTED_TARGET libzmq)
# toml++ 3 (libtomlplusplus-dev, a compiled library): tempokvd's configuration file.
find_package(tomlplusplus REQUIRED)
# msgpack-c (C++, header-only, libmsgpack-cxx-dev). Its CMake package (msgpack-config.cmake under
# cmake/msgpackc-cxx) requires Boost, which MSGPACK_NO_BOOST makes unnecessary, so the header is
# found directly and wrapped in our own interface target.
find_path(MSGPACK_INCLUDE_DIR msgpack.hpp)
if(NOT MSGPACK_INCLUDE_DIR)
  message(FATAL_ERROR "msgpack.hpp not found: install libmsgpack-cxx-dev (scripts/install-deps)")
endif()
add_library(tempokv_msgpack INTERFACE)
target_include_directories(tempokv_msgpack SYSTEM INTERFACE ${MSGPACK_INCLUDE_DIR})
target_compile_definitions(tempokv_msgpack INTERFACE MSGPACK_NO_BOOST MSGPACK_DEFAULT_API_VERSION=3)
if(TEMPOKV_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(TEMPOKV_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()

# CUDA is optional: the runtime API is linked when a toolkit is found; cuFile is never a build
# dependency (it is loaded with dlopen at run time).
set(TEMPOKV_HAVE_CUDA OFF)
if(TEMPOKV_CUDA)
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND)
    set(TEMPOKV_HAVE_CUDA ON)
    message(STATUS "tempokv: CUDA ${CUDAToolkit_VERSION} found, building CUDA transfer paths")
  else()
    message(STATUS "tempokv: no CUDA toolkit, CUDA transfer paths not built")
  endif()
endif()
