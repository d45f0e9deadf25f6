# The out-of-tree example, end to end, as a backend author would see it:
#   1. install this build into a fresh prefix,
#   2. configure and build examples/out-of-tree-backend against that prefix
#      only (find_package(tport)), and once more with plain pkg-config,
#   3. check the plug-in has no DT_NEEDED on libtport,
#   4. run the example's graph test (linked against the INSTALLED libtport)
#      with TPORT_BACKEND=example,cpu,
#   5. `tport backends` from the prefix lists it active; `tport
#      check-backend` passes on it,
#   6. a model run with it preferred gives the CPU-only ids.
# Variables: BUILD_DIR SOURCE_DIR WORK_DIR GENERATOR C_COMPILER SANITIZE READELF CTEST MODEL
cmake_minimum_required(VERSION 3.20)

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  set(run_out "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
set(ex_build ${WORK_DIR}/example-build)

message(STATUS "1. install into ${prefix}")
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})

message(STATUS "2. build the example against the installed tensorport")
set(flags "")
if(SANITIZE)
  set(flags "-fsanitize=${SANITIZE} -fno-omit-frame-pointer")
endif()
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples/out-of-tree-backend -B ${ex_build} -G ${GENERATOR}
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_C_COMPILER=${C_COMPILER} "-DCMAKE_C_FLAGS=${flags}"
    -DCMAKE_BUILD_TYPE=Release)
run(${CMAKE_COMMAND} --build ${ex_build})
set(plugin ${ex_build}/libtport-example.so)
if(NOT EXISTS ${plugin})
  message(FATAL_ERROR "no ${plugin}")
endif()

find_program(PKG_CONFIG pkg-config)
if(PKG_CONFIG)
  set(ENV{PKG_CONFIG_PATH} ${prefix}/lib/pkgconfig)
  # tport.pc carries the configured prefix; the test installed elsewhere
  run(${PKG_CONFIG} --define-variable=prefix=${prefix} --cflags tport)
  string(STRIP "${run_out}" cflags)
  separate_arguments(cflags UNIX_COMMAND "${cflags}")
  run(${C_COMPILER} -std=c11 -shared -fPIC -fvisibility=hidden ${cflags}
      ${SOURCE_DIR}/examples/out-of-tree-backend/example_backend.c -o ${WORK_DIR}/libtport-example-pc.so)
  message(STATUS "   built with pkg-config too (${cflags})")
endif()

message(STATUS "3. no DT_NEEDED on libtport")
if(READELF)
  foreach(so ${plugin} ${WORK_DIR}/libtport-example-pc.so)
    if(EXISTS ${so})
      run(${READELF} -d ${so})
      if(run_out MATCHES "libtport")
        message(FATAL_ERROR "${so} depends on libtport:\n${run_out}")
      endif()
    endif()
  endforeach()
endif()

message(STATUS "4. graph test: example computes add, mul, mul_mat; cpu the rest")
run(${CTEST} --test-dir ${ex_build} --output-on-failure)
message(STATUS "${run_out}")

message(STATUS "5. tport backends / check-backend from the prefix")
run(${CMAKE_COMMAND} -E env TPORT_BACKEND_PATH=${plugin} ${prefix}/bin/tport backends)
if(NOT run_out MATCHES "active +example")
  message(FATAL_ERROR "example not active in `tport backends`:\n${run_out}")
endif()
# the CPU variants are found beside the installed libtport, by themselves
file(GLOB variants ${prefix}/lib*/tport/backends/libtport-cpu-*.so)
if(variants AND NOT run_out MATCHES "/tport/backends/libtport-cpu-[a-z0-9-]+\\.so \\(installed\\)")
  message(FATAL_ERROR "installed CPU variants not discovered relative to libtport:\n${run_out}")
endif()
run(${prefix}/bin/tport check-backend ${plugin})
message(STATUS "${run_out}")

# 6. a real model with the example preferred: it takes add, mul and
# mul_mat of F32 (in memory of its own) and declines the KV cache's cpy;
# the ids must be the CPU-only ones, with either KV cache type
if(MODEL AND EXISTS ${MODEL})
  message(STATUS "6. tport run with TPORT_BACKEND=example,cpu")
  foreach(kv f16 f32)
    set(args run -m ${MODEL} --prompt-ids 1,5,9 -n 16 --ids --temp 0 --threads 1 --kv-type ${kv})
    run(${CMAKE_COMMAND} -E env --unset=TPORT_BACKEND_PATH --unset=TPORT_BACKEND ${prefix}/bin/tport ${args})
    set(ref "${run_out}")
    execute_process(COMMAND ${CMAKE_COMMAND} -E env TPORT_BACKEND_PATH=${plugin} TPORT_BACKEND=example,cpu
        ${prefix}/bin/tport ${args} --plan RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    if(NOT rc EQUAL 0 OR NOT out STREQUAL ref OR NOT err MATCHES "backend example \\(device memory\\)[^\n]*mul_mat")
      message(FATAL_ERROR "kv ${kv}: with the example (${rc}):\n  cpu only: ${ref}\n  example:  ${out}\n${err}")
    endif()
    message(STATUS "   kv ${kv}: ${out}")
  endforeach()
else()
  message(STATUS "6. skipped: no model file (${MODEL})")
endif()
message(STATUS "example out-of-tree backend: all steps passed")
