# The order ctest starts tests in: with -j N it starts the tests of the largest COST first, and a
# build folder without timings of its own (CI's clean clone) has none but these. Listed in the
# declared order, a 20-30 s test declared last (the SLURM cluster, plot drawing, the Python
# package, test_registration) started when the short ones were done, and one core idled while it
# finished: a long test started first overlaps the many short ones instead.
#
# Each entry is "NAME|SECONDS_FULL|SECONDS_SMOKE": the test's wall time in a warm CI run in the
# Release build and at the smoke scale (the sanitizer build; the clang build follows the same
# order), rounded; only the order matters, so a test of a few seconds needs no entry. Measured by
# scripts/test.sh (`build/<preset>/Testing/Temporary/CTestCostData.txt` holds the last run's
# times; docs/development.md, "Tests").
#
# Included at the end of test/CMakeLists.txt: the tests declared by add_test get their COST here;
# the Catch2 test cases exist only when ctest reads the discovered lists, so their COST is set by
# a file that ctest includes after those lists (TEST_INCLUDE_FILES, in the order added).
set(attndev_test_costs
    "slurm_cluster|27|0"
    "python_package|19|0"
    "test_registration|19|0"
    "plot_draw|16|0"
    "gpu_check_script|16|0"
    "flash2-tc-twin equals the kernel on the host simulator bit for bit, per profile|15|10"
    "experiment_external_numpy|12|14"
    "round_to matches the oracle on 1e7 random floats|11|2"
    "attndev train --quick runs the weight study end to end|10|0"
    "twins on the device path equal attention::run on random faithful cases|9|4"
    "add/sub/mul/div/fma in every format, operands of the format and wider|9|2"
    "round_to matches the oracle on 1e7 random doubles|8|2"
    "experiment_external_worker|8|6"
    "flash2-tc on the host simulator matches the emulator race-free for every table row|8|8"
    "tensor-core float lanes equal the scalar model on every profile|8|3"
    "mma oracle: sm90 fp8 dot-adds equal the big-integer oracle bit for bit|7|5"
    "mma oracle: sm100 fp8 dot-adds equal the big-integer oracle bit for bit|7|4"
    "kernel model equals an independent scalar reference written from docs/numerics.md|2|12"
    "right padding masked gives each sequence's own bits, every exact preset|2|12"
    "the device golden equals the CPU golden|1|11"
    "fa2-cuda twin equals an independent thread-level reference of the kernel|1|9"
    "twins on the device path equal attention::run bit for bit, every preset|4|17"
    "flash2 torch-cpu-flash-* and kernel-* against PyTorch's CPU flash kernel's fixtures|1|12"
    "results are bit-identical for 1 and 2 threads and shuffled Q-block order|1|12"
    "fa2-cuda split-KV path: per-split passes, fp32 partial O, and the combine kernel|1|12"
    "fa2-cuda: each modelled step changes bits, and the twin takes the source's choice|1|12"
    "SIGTERM and SIGHUP are handled like SIGINT: flush, exit 75, the rerun completes|2|11"
    "a run killed with SIGKILL mid-sweep resumes to the uninterrupted result|2|10"
    "a mask of zeros is no mask and an explicit causal mask is the causal option|1|10")

if(ATTNDEV_TEST_SCALE STREQUAL "smoke")
  set(attndev_cost_column 2)
else()
  set(attndev_cost_column 1)
endif()
set(attndev_catch_costs "")
foreach(entry IN LISTS attndev_test_costs)
  string(REPLACE "|" ";" fields "${entry}")
  list(GET fields 0 name)
  list(GET fields ${attndev_cost_column} cost)
  if(TEST "${name}")
    set_tests_properties("${name}" PROPERTIES COST ${cost})
  else()
    # A bracket argument keeps the name as it is (quotes, '*', ':').
    string(APPEND attndev_catch_costs
           "set_tests_properties([==[${name}]==] PROPERTIES COST ${cost})\n")
  endif()
endforeach()
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/catch_costs.cmake "${attndev_catch_costs}")
set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES
                                       ${CMAKE_CURRENT_BINARY_DIR}/catch_costs.cmake)
