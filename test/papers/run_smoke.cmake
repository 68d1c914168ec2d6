# cmake -DATTNDEV=... -DCONFIG=... -DOVERRIDES="-a|k=v|..." -DOUT=dir [-DALLOW_SKIPPED=1]
#       [-DPYTHON=python3 -DCLAIMS="claim|claim|..."] -P run_smoke.cmake
# Runs one paper config with its smoke overrides into a fresh folder and checks that it exited 0
# and produced rows, every one of them with status "ok" (a run that compared nothing fails), then
# that the direction of each paper claim holds on those rows (check_claims.py says how a claim is
# written).
string(REPLACE "|" ";" args "${OVERRIDES}")
file(REMOVE_RECURSE ${OUT})
execute_process(COMMAND ${ATTNDEV} run ${CONFIG} -o ${OUT} --no-summary -j 1 ${args}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "attndev run ${CONFIG} ${args} exited ${rc}\n${out}\n${err}")
endif()
if(NOT EXISTS ${OUT}/results.csv)
  message(FATAL_ERROR "no results.csv in ${OUT}\n${err}")
endif()
file(STRINGS ${OUT}/results.csv lines)
list(LENGTH lines n_lines)
math(EXPR rows "${n_lines} - 1")
if(rows LESS 1)
  message(FATAL_ERROR "${OUT}/results.csv has no rows")
endif()
list(GET lines 0 header)
if(NOT header MATCHES "(^|,)status(,|$)")
  message(FATAL_ERROR "results.csv has no status column: ${header}")
endif()
# Axis values such as "normal(0,1)" are quoted and hold commas, so fields are not split: a row is
# ok when its status cell is exactly `ok` (no other column of a row holds that text).
set(not_ok 0)
foreach(line IN LISTS lines)
  if(line STREQUAL header)
    continue()
  endif()
  if(ALLOW_SKIPPED AND line MATCHES ",\"?skipped: ")
    continue()  # a recipe on a profile without its instructions: skipped by design, with why
  endif()
  if(NOT line MATCHES ",ok,")
    math(EXPR not_ok "${not_ok} + 1")
    message(STATUS "not ok: ${line}")
  endif()
endforeach()
if(not_ok GREATER 0)
  message(FATAL_ERROR "${not_ok} of ${rows} rows are not ok")
endif()
message(STATUS "${rows} rows, all ok")
if(NOT CLAIMS STREQUAL "")
  string(REPLACE "|" ";" claims "${CLAIMS}")
  execute_process(COMMAND ${PYTHON} ${CMAKE_CURRENT_LIST_DIR}/check_claims.py ${OUT}/results.csv
                          ${claims}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message(STATUS "claims:\n${out}${err}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "a paper claim does not hold on ${OUT}/results.csv")
  endif()
endif()
