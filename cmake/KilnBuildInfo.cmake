# Run at build time (cmake -P): writes OUT, a source file that names the git commit of SOURCE_DIR.
# The file is rewritten only when the commit changes, so an unchanged tree recompiles nothing.
execute_process(COMMAND git -C "${SOURCE_DIR}" rev-parse --short=12 HEAD
                OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR commit STREQUAL "")
  set(commit "unknown")
else()
  execute_process(COMMAND git -C "${SOURCE_DIR}" status --porcelain --untracked-files=no
                  OUTPUT_VARIABLE dirty OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(NOT dirty STREQUAL "")
    set(commit "${commit}-dirty")
  endif()
endif()
set(text "// Generated at build time by cmake/KilnBuildInfo.cmake.\n#include \"engine/base/build_info.h\"\nnamespace kiln {\nconst char* build_version() { return \"${VERSION}\"; }\nconst char* build_commit() { return \"${commit}\"; }\n}  // namespace kiln\n")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
else()
  set(old "")
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUT}" "${text}")
endif()
