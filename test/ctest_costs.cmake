# The order ctest starts tests in: with -j N it starts the tests of the largest COST first, and a
# build folder without timings of its own (CI's clean clone) has none but these. Listed in the
# declared order, a 20-30 s test declared last (the SLURM cluster, plot drawing, the Python
# package, test_registration) started when the short ones were done, and one core idled while it
# finished: a long test started first overlaps the many short ones instead.
#
# Each entry is "NAME|SECONDS_FULL|SECONDS_SMOKE": the test's wall time in a warm CI run in the
# Release build and at the smoke scale (the sanitizer build; the clang build follows the same
# order), rounded, from the ctest output of scripts/test.sh (2 cores, other builds beside it);
# only the order matters, so a test under 5 s in both needs no entry. (ctest's own record of
# past times, Testing/Temporary/CTestCostData.txt, does not help here: a clean clone has none.)
#
# Included at the end of test/CMakeLists.txt: the tests declared by add_test get their COST here;
# the Catch2 test cases exist only when ctest reads the discovered lists, so their COST is set by
# a file that ctest includes after those lists (TEST_INCLUDE_FILES, in the order added). ctest
# ignores a property set on a test it does not have; test_registration (check_registration.cmake)
# fails instead when an entry here names no test, so a renamed test cannot lose its place unseen.
set(attndev_test_costs
    "test_registration|27|0"
    "slurm_cluster|25|0"
    "flash2-tc-twin equals the kernel on the host simulator bit for bit, per profile|12|23"
    "python_package|20|0"
    "plot_draw|20|0"
    "twins on the device path equal attention::run bit for bit, every preset|2|18"
    "gpu_check_script|16|0"
    "experiment_external_numpy|14|15"
    "kernel model equals an independent scalar reference written from docs/numerics.md|1|15"
    "flash2 torch-cpu-flash-* and kernel-* against PyTorch's CPU flash kernel's fixtures|0|15"
    "flash2-tc on the host simulator matches the emulator race-free for every table row|4|14"
    "results are bit-identical for 1 and 2 threads and shuffled Q-block order|1|13"
    "the device golden equals the CPU golden|1|12"
    "twins on the device path equal attention::run on random faithful cases|12|2"
    "fa2-cuda: each modelled step changes bits, and the twin takes the source's choice|0|11"
    "SIGTERM and SIGHUP are handled like SIGINT: flush, exit 75, the rerun completes|1|11"
    "round_to matches the oracle on 1e7 random floats|11|1"
    "right padding masked gives each sequence's own bits, every exact preset|2|11"
    "attndev train --quick runs the weight study end to end|11|0"
    "fa2-cuda split-KV path: per-split passes, fp32 partial O, and the combine kernel|0|10"
    "tensor-core float lanes equal the scalar model on every profile, fp32 and fp16 D|12|1"
    "experiment_external_worker|6|9"
    "a run killed with SIGKILL mid-sweep resumes to the uninterrupted result|1|9"
    "a mask of zeros is no mask and an explicit causal mask is the causal option|1|8"
    "fa2-cuda twin equals an independent thread-level reference of the kernel|1|7"
    "quantized recipes: inf and NaN inputs take the reference's path in the fast form|0|7"
    "add/sub/mul/div/fma in every format, operands of the format and wider|7|0"
    "quantized recipes: the fast form equals the reference form bit for bit|2|6"
    "one writer per results file: a second run, --force-new, report and merge are refused while a run writes|1|6"
    "quant lanes: P's float rounding equals round_element for the recipes' formats|1|6"
    "shards of one folder still run at the same time, each in its own file|1|6"
    "gpu_check_groups|6|0"
    "mem-efficient twin equals an independent reference, and each modelled step matters|0|5")

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
