# Runs a tapestry command under MPI and checks its output (a ctest of label "mpi").
#   cmake -DTAPESTRY=... -DMPIEXEC=... -DNP=2 -DSCRIPT=x.lua [-DIGNORE=regex] -P run_compare.cmake
#     stdout under `mpirun -n NP` must equal the single-rank run's, lines matching IGNORE
#     (counters of single-rank kernels) left out
#   cmake -DTAPESTRY=... -DNP=2 -DCHUNK="print(1)" -DEXPECT="1\n" -P run_compare.cmake
#     stdout of `tapestry -n NP [EXTRA] -e CHUNK` (which starts mpirun itself) must be EXPECT exactly
function(run out_var)
  execute_process(COMMAND ${ARGN} OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n--- stdout\n${out}\n--- stderr\n${err}")
  endif()
  set(${out_var} "${out}" PARENT_SCOPE)
endfunction()

function(drop_ignored var)
  if(DEFINED IGNORE)
    string(REGEX REPLACE "[^\n]*(${IGNORE})[^\n]*\n" "" cleaned "${${var}}")
    set(${var} "${cleaned}" PARENT_SCOPE)
  endif()
endfunction()

if(DEFINED SCRIPT)
  run(single ${TAPESTRY} ${SCRIPT})
  run(multi ${MPIEXEC} -n ${NP} ${TAPESTRY} ${SCRIPT})
  drop_ignored(single)
  drop_ignored(multi)
  # On N ranks a printed tensor's footer also says how it was split ("[f32 tensor of shape
  # {5}, computed as split(1, 2)]"); the values must match, the note may not.
  string(REGEX REPLACE ", computed as [a-z0-9 ,(){}]*\\]" "]" multi "${multi}")
  if(NOT single STREQUAL multi)
    file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/single.txt "${single}")
    file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/multi.txt "${multi}")
    message(FATAL_ERROR "${SCRIPT}: output on ${NP} ranks differs from one rank's "
                        "(see single.txt and multi.txt in ${CMAKE_CURRENT_BINARY_DIR})")
  endif()
else()
  string(REPLACE "\\n" "\n" expect "${EXPECT}")
  run(got ${TAPESTRY} -n ${NP} ${EXTRA} -e ${CHUNK})
  if(NOT got STREQUAL expect)
    message(FATAL_ERROR "tapestry -n ${NP} -e '${CHUNK}': expected [${expect}], got [${got}]")
  endif()
endif()
