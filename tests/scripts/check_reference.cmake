# Fails when docs/reference.md differs from `tapestry --reference`.
# Regenerate with: build/repl/tapestry --reference > docs/reference.md
execute_process(COMMAND ${TAPESTRY} --reference OUTPUT_VARIABLE generated RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "tapestry --reference failed (${rc})")
endif()
file(READ ${REFERENCE} committed)
if(NOT generated STREQUAL committed)
  message(FATAL_ERROR "docs/reference.md is stale: run `build/repl/tapestry --reference > docs/reference.md`")
endif()
