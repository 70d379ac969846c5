# Warning flags and sanitizer selection, applied to every target of the project.
add_compile_options(-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wno-missing-field-initializers)
if(TEMPOKV_WERROR)
  add_compile_options(-Werror)
  # GCC 12's -Wrestrict misfires on std::string's short assignments once inlined at -O2 and
  # above (GCC bug 105329): tests/engine/step_truth_test.cc fails a Release build with it. Still a
  # warning, not an error.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    add_compile_options(-Wno-error=restrict)
  endif()
endif()

if(TEMPOKV_SANITIZE STREQUAL "asan")
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
elseif(TEMPOKV_SANITIZE STREQUAL "tsan")
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
elseif(NOT TEMPOKV_SANITIZE STREQUAL "none")
  message(FATAL_ERROR "TEMPOKV_SANITIZE must be none, asan or tsan (got '${TEMPOKV_SANITIZE}')")
endif()
