# The ctest entry `test_registration`: every TEST_CASE that a Catch2 executable defines is a ctest
# entry, and every entry runs exactly one test case.
#
# Why: catch_discover_tests turns the executable's `--list-test-names-only` output into a CMake
# list, so a test name containing ';' becomes two entries and an unbalanced '[' swallows the names
# after it into one. Each such entry's filter matches no test; Catch2 then prints "No tests ran"
# and exits 0, and ctest counts a test that never ran as passed. (The entries also pass
# `--warn NoTests`, which makes that run exit 2; this check catches the registration itself,
# before anything runs, and the names that would break it.)
#
# It also checks that every test test/ctest_costs.cmake gives a COST to exists: that list orders
# the tests by name, and ctest ignores a property set on a test it does not have, so a renamed
# test would lose its place (and a long test start last) without a word.
#
#   cmake -DCTEST=<ctest> -DBUILD_DIR=<build dir> -DEXECUTABLES=<file: one executable per line>
#         [-DCOSTS=<the generated catch_costs.cmake>] -P check_registration.cmake
cmake_minimum_required(VERSION 3.25)

set(problems "")
macro(problem text)
  string(APPEND problems "  ${text}\n")
endmacro()

# Splits TEXT at newlines into the numbered variables ${PREFIX}_0.. and sets ${PREFIX}_COUNT,
# without going through a CMake list (whose ';' and '[' handling is the bug being checked).
function(split_lines text prefix)
  set(count 0)
  while(NOT text STREQUAL "")
    string(FIND "${text}" "\n" eol)
    if(eol EQUAL -1)
      set(line "${text}")
      set(text "")
    else()
      string(SUBSTRING "${text}" 0 ${eol} line)
      math(EXPR next "${eol} + 1")
      string(SUBSTRING "${text}" ${next} -1 text)
    endif()
    string(REGEX REPLACE "\r$" "" line "${line}")
    if(NOT line STREQUAL "")
      set(${prefix}_${count} "${line}" PARENT_SCOPE)
      math(EXPR count "${count} + 1")
    endif()
  endwhile()
  set(${prefix}_COUNT ${count} PARENT_SCOPE)
endfunction()

execute_process(COMMAND ${CTEST} --show-only=json-v1 WORKING_DIRECTORY ${BUILD_DIR}
                OUTPUT_VARIABLE ctest_json RESULT_VARIABLE rc ERROR_VARIABLE ctest_err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ctest --show-only=json-v1 failed (${rc}): ${ctest_err}")
endif()
string(JSON tests GET "${ctest_json}" tests)
string(JSON n_tests LENGTH "${tests}")
# Each entry's object and the executable it runs, parsed once.
math(EXPR last_test "${n_tests} - 1")
foreach(t RANGE ${last_test})
  string(JSON test_${t} GET "${tests}" ${t})
  string(JSON runs_${t} ERROR_VARIABLE no_command GET "${test_${t}}" command 0)
  # Every entry's name, as a set keyed by its hash (a name is no CMake variable name).
  string(JSON registered_name GET "${test_${t}}" name)
  string(MD5 key "${registered_name}")
  set(registered_${key} 1)
endforeach()

file(READ ${EXECUTABLES} exe_text)
split_lines("${exe_text}" exe)
if(exe_COUNT EQUAL 0)
  message(FATAL_ERROR "${EXECUTABLES} lists no test executables")
endif()

set(total_defined 0)
set(total_entries 0)
math(EXPR last_exe "${exe_COUNT} - 1")
foreach(e RANGE ${last_exe})
  set(exe "${exe_${e}}")
  get_filename_component(exe_name "${exe}" NAME)
  execute_process(COMMAND "${exe}" --list-test-names-only OUTPUT_VARIABLE listing
                  RESULT_VARIABLE listed)
  split_lines("${listing}" name)
  math(EXPR total_defined "${total_defined} + ${name_COUNT}")
  if(name_COUNT EQUAL 0)
    problem("${exe_name}: defines no test case")
    continue()
  endif()
  # Catch2 v2 returns the number of test cases listed.
  if(NOT listed EQUAL name_COUNT)
    problem("${exe_name}: --list-test-names-only returned ${listed} but printed ${name_COUNT} names")
  endif()
  math(EXPR last_name "${name_COUNT} - 1")
  foreach(i RANGE ${last_name})
    string(FIND "${name_${i}}" ";" semicolon)
    string(FIND "${name_${i}}" "[" bracket)
    if(NOT semicolon EQUAL -1 OR NOT bracket EQUAL -1)
      problem("${exe_name}: test case name contains ';' or '[' (ctest discovery splits or merges it): \"${name_${i}}\"")
    endif()
  endforeach()

  # The ctest entries whose command runs this executable, and what each filter selects.
  set(entries 0)
  foreach(t RANGE ${last_test})
    if(NOT runs_${t} STREQUAL exe)
      continue()
    endif()
    set(test "${test_${t}}")
    math(EXPR entries "${entries} + 1")
    string(JSON test_name GET "${test}" name)
    string(JSON n_args LENGTH "${test}" command)
    set(args "")
    math(EXPR last_arg "${n_args} - 1")
    foreach(a RANGE 1 ${last_arg})
      string(JSON arg GET "${test}" command ${a})
      list(APPEND args "${arg}")
    endforeach()
    execute_process(COMMAND "${exe}" ${args} --list-test-names-only OUTPUT_VARIABLE selected)
    split_lines("${selected}" sel)
    if(NOT sel_COUNT EQUAL 1)
      problem("${exe_name}: ctest entry \"${test_name}\" selects ${sel_COUNT} test cases (expected 1)")
    endif()
  endforeach()
  math(EXPR total_entries "${total_entries} + ${entries}")
  if(NOT entries EQUAL name_COUNT)
    problem("${exe_name}: defines ${name_COUNT} test cases but ctest has ${entries} entries for it")
  endif()
endforeach()

# The COSTs ctest_costs.cmake could not give at configure time (the Catch2 test cases, and any
# name no add_test declared): each must name an entry.
if(DEFINED COSTS)
  file(READ ${COSTS} costs_text)
  split_lines("${costs_text}" cost)
  set(cost_problems "")
  if(cost_COUNT GREATER 0)
    math(EXPR last_cost "${cost_COUNT} - 1")
    foreach(c RANGE ${last_cost})
      if(NOT cost_${c} MATCHES "^set_tests_properties\\(\\[==\\[(.*)\\]==\\] PROPERTIES COST")
        string(APPEND cost_problems "  ${COSTS}: a line not written by ctest_costs.cmake: ${cost_${c}}\n")
        continue()
      endif()
      set(cost_name "${CMAKE_MATCH_1}")
      string(MD5 key "${cost_name}")
      if(NOT DEFINED registered_${key})
        string(APPEND cost_problems "  \"${cost_name}\"\n")
      endif()
    endforeach()
  endif()
  if(NOT cost_problems STREQUAL "")
    message(FATAL_ERROR "test/ctest_costs.cmake gives a COST to tests that do not exist (renamed or "
                        "removed: ctest would ignore the entry and start the test in declared "
                        "order):\n${cost_problems}"
                        "Rename or remove these entries in test/ctest_costs.cmake.")
  endif()
endif()

if(NOT problems STREQUAL "")
  message(FATAL_ERROR "test registration is broken (tests that never run would count as passed):\n"
                      "${problems}"
                      "Rename the test cases (no ';' or '[' in a TEST_CASE name) and rebuild.")
endif()
message(STATUS "test registration: ${exe_COUNT} executables, ${total_defined} test cases, "
               "${total_entries} ctest entries, each running exactly one test case")
