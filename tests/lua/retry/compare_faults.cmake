# Runs SCRIPT without faults and with TAPESTRY_BLOCK_FAULT=FAULT (the script's argument
# "faulty"), by LAUNCH (the tapestry binary, or "mpirun -n 2 tapestry"); the outputs
# must be equal: a retried block gives the same values.
#   cmake -DLAUNCH="/path/tapestry" -DSCRIPT=retry.lua -DFAULT=3 -P compare_faults.cmake
function(run out_var)
  execute_process(COMMAND ${ARGN} OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc TIMEOUT 120)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n--- stdout\n${out}\n--- stderr\n${err}")
  endif()
  set(${out_var} "${out}" PARENT_SCOPE)
endfunction()
separate_arguments(LAUNCH)
run(clean ${LAUNCH} ${SCRIPT})
run(faulty ${CMAKE_COMMAND} -E env TAPESTRY_BLOCK_FAULT=${FAULT} ${LAUNCH} ${SCRIPT} faulty)
if(NOT clean STREQUAL faulty)
  message(FATAL_ERROR "values differ with injected faults\n--- clean\n${clean}\n--- faulty\n${faulty}")
endif()
message(STATUS "same values with TAPESTRY_BLOCK_FAULT=${FAULT}:\n${faulty}")
