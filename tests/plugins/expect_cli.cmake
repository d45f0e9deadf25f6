# Runs EXE with ARGS (a ;-list) and checks that it ended with exit status RC
# (a number: a death by signal fails) and that stdout+stderr match REGEX.
# Usage: cmake -DEXE=... -DARGS=a;b -DRC=2 -DREGEX=... -P expect_cli.cmake
execute_process(COMMAND ${EXE} ${ARGS} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
set(all "${out}${err}")
if(NOT "${rc}" STREQUAL "${RC}")
  message(FATAL_ERROR "expected exit status ${RC}, got '${rc}'\n${all}")
endif()
if(NOT all MATCHES "${REGEX}")
  message(FATAL_ERROR "output does not match '${REGEX}':\n${all}")
endif()
message(STATUS "exit ${rc}, output matches '${REGEX}'")
