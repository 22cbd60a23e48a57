# Writes the git revision of SOURCE_DIR into OUTPUT as the macro ATTNPROF_GIT_REVISION, rewriting the file only when
# the text changes. Run at every build (the attnprof_revision target), so that a binary reports the tree
# it was built from: the commit, and "-dirty" when src/, kernels/ or CMakeLists.txt differ from it.
execute_process(COMMAND git rev-parse --short=12 HEAD WORKING_DIRECTORY ${SOURCE_DIR}
                OUTPUT_VARIABLE revision OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE failed)
if(failed OR NOT revision)
  set(revision "unknown")
else()
  execute_process(COMMAND git diff --quiet HEAD -- src kernels CMakeLists.txt WORKING_DIRECTORY ${SOURCE_DIR}
                  RESULT_VARIABLE dirty ERROR_QUIET)
  if(dirty EQUAL 1)
    string(APPEND revision "-dirty")
  endif()
endif()
set(text "#define ATTNPROF_GIT_REVISION \"${revision}\"\n")
if(EXISTS ${OUTPUT})
  file(READ ${OUTPUT} previous)
endif()
if(NOT "${text}" STREQUAL "${previous}")
  file(WRITE ${OUTPUT} "${text}")
endif()
