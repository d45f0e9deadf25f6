# One isolated crashy plug-in over a real model, end to end:
#   1. `tport run` without any plug-in gives the CPU-only ids;
#   2. the same run with PLUGIN isolated (--isolate crashy) must give the
#      same ids, exit 0 and report the loss in one line matching REGEX;
#   3. no process carrying this test's marker (passed to the helper through
#      TPORT_ISOLATE_ENV) may be left once the run has ended.
# Usage: cmake -DEXE=tport -DMODEL=file -DPLUGIN=lib.so -DREGEX=... -DMARK=word [-DNAME=crashy]
#              [-DENV=VAR=value;...] [-DLOSSES=1] -P isolate_run_test.cmake
# (ENV goes to the run and, through TPORT_ISOLATE_ENV, to the helper.)
if(NOT EXISTS "${MODEL}")
  message(STATUS "skipped: ${MODEL} is not there")
  return()
endif()
set(args run -m ${MODEL} --prompt-ids 1 -n 16 --ids --temp 0 --threads 1)
if(NOT NAME)
  set(NAME crashy)
endif()
if(NOT DEFINED LOSSES)
  set(LOSSES 1)
endif()
set(pass TPORT_TEST_MARK)
foreach(e ${ENV})
  string(REGEX REPLACE "=.*" "" var "${e}")
  string(APPEND pass ",${var}")
endforeach()
execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=TPORT_BACKEND_PATH --unset=TPORT_BACKEND_ISOLATE
    ${EXE} ${args}
  RESULT_VARIABLE rc OUTPUT_VARIABLE ref ERROR_VARIABLE ref_err TIMEOUT 120)
if(NOT rc EQUAL 0 OR NOT ref MATCHES "^[0-9]+(,[0-9]+)+")
  message(FATAL_ERROR "the reference run failed (${rc}):\n${ref}${ref_err}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E env TPORT_BACKEND_PATH=${PLUGIN} TPORT_COMPUTE_TIMEOUT=2
    TPORT_ISOLATE_ENV=${pass} TPORT_TEST_MARK=${MARK} ${ENV} ${EXE} ${args} --isolate ${NAME}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the isolated run failed (${rc}):\n${out}${err}")
endif()
if(NOT out STREQUAL ref)
  message(FATAL_ERROR "ids differ from the CPU-only run:\n  cpu:      ${ref}\n  isolated: ${out}\n${err}")
endif()
if(NOT err MATCHES "${REGEX}")
  message(FATAL_ERROR "stderr does not match '${REGEX}':\n${err}")
endif()
string(REGEX MATCHALL "lost:" losses "${err}")
list(LENGTH losses n_losses)
if(NOT n_losses EQUAL LOSSES)
  message(FATAL_ERROR "the loss is reported ${n_losses} times, not ${LOSSES}:\n${err}")
endif()
execute_process(COMMAND sh -c "grep -ls 'TPORT_TEST_MARK=${MARK}' /proc/[0-9]*/environ"
  OUTPUT_VARIABLE left)
if(left)
  message(FATAL_ERROR "a process is left behind: ${left}")
endif()
message(STATUS "same ids as the CPU-only run; ${err}")
