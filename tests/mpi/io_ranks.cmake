# Parallel .npy I/O under MPI (tests/lua/io/parallel_npy.lua): files saved on -n SAVE_NP load
# on each of LOAD_NPS (1 = plain tapestry, no mpirun) with the same values, each rank reading
# and writing only its own boxes; with TAPESTRY_IO_FAULT=2 on -n 3 every operation fails
# naming rank 2.
#   cmake -DTAPESTRY=... -DMPIEXEC=... -DSCRIPT=parallel_npy.lua -DSAVE_NP=2 -DLOAD_NPS=4,1 -P io_ranks.cmake
function(run)
  execute_process(COMMAND ${ARGN} OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n--- stdout\n${out}\n--- stderr\n${err}")
  endif()
  message(STATUS "${ARGN}: ${out}")
endfunction()

function(on np)
  if(np EQUAL 1)
    run(${TAPESTRY} ${ARGN})
  else()
    run(${MPIEXEC} -n ${np} ${TAPESTRY} ${ARGN})
  endif()
endfunction()

string(RANDOM LENGTH 8 tag)
set(dir "/tmp/tapestry-pio-${tag}")
file(MAKE_DIRECTORY ${dir})
on(${SAVE_NP} ${SCRIPT} save ${dir})
string(REPLACE "," ";" load_nps "${LOAD_NPS}")
foreach(np IN LISTS load_nps)
  on(${np} ${SCRIPT} load ${dir})
endforeach()
if(DEFINED FAULT_NP)
  set(ENV{TAPESTRY_IO_FAULT} 2)
  on(${FAULT_NP} ${SCRIPT} fail ${dir})
  unset(ENV{TAPESTRY_IO_FAULT})
endif()
file(REMOVE_RECURSE ${dir})
