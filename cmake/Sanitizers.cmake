# Sanitized builds (scripts/sanitize): -DKILN_SANITIZE=address,undefined instruments every target
# Kiln builds (engine, CLI, tests, plugins). LibTorch and the other system libraries stay
# uninstrumented; their reports are suppressed narrowly (scripts/sanitizers/*.supp, docs/sanitizers.md).
#
# The C++ kernels Kiln generates and compiles at run time are built with the same flags
# (KILN_KERNEL_SANITIZE_FLAGS, baked into cpp_flags()), so out-of-bounds index arithmetic in a
# generated kernel is caught too; the flags are part of the kernel cache key, so sanitized and
# plain kernel libraries never mix.
set(KILN_SANITIZE "" CACHE STRING "Sanitizers to build with, e.g. address,undefined (empty: none)")

if(KILN_SANITIZE)
  set(KILN_SANITIZE_FLAGS -fsanitize=${KILN_SANITIZE} -fno-omit-frame-pointer)
  if(KILN_SANITIZE MATCHES "undefined")
    list(APPEND KILN_SANITIZE_FLAGS -fno-sanitize-recover=undefined)
  endif()
  add_compile_options(${KILN_SANITIZE_FLAGS})
  add_link_options(-fsanitize=${KILN_SANITIZE})
  string(REPLACE ";" " " KILN_KERNEL_SANITIZE_FLAGS "${KILN_SANITIZE_FLAGS}")
  add_compile_definitions(KILN_KERNEL_SANITIZE_FLAGS="${KILN_KERNEL_SANITIZE_FLAGS}")
  message(STATUS "Sanitizers: ${KILN_SANITIZE} (run-time kernels too)")
endif()
