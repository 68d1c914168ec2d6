# Tests that need an interpreter outside the build: one executable each, registered with add_test
# (catch_discover_tests would run them at build time). Without the interpreter they exit 77 and
# ctest reports them as skipped, never passed.
#   experiment_external_numpy  the external-variant protocol end to end with
#                              scripts/external/numpy_attention.py (python3 with numpy)
#   experiment_external_torch_framework
#                              framework-bf16/fp16 against the PyTorch loops they model
#                              (scripts/external/torch_attention.py; a python3 with torch)
#   experiment_external_worker external variants in worker form (python/attndev/worker.py with
#                              the numpy implementation; python3 with numpy)
foreach(t external_numpy external_torch_framework external_worker)
  add_executable(experiment_${t} ${CMAKE_CURRENT_LIST_DIR}/${t}.cpp)
  target_link_libraries(experiment_${t} PRIVATE attndev_catch_main ${ATTNDEV_TEST_LIBS}
                        nlohmann_json::nlohmann_json)
  target_include_directories(experiment_${t} PRIVATE ${PROJECT_SOURCE_DIR}/lib
                             ${PROJECT_SOURCE_DIR}/test)
  attndev_test_optimization(experiment_${t} experiment)
  add_test(NAME experiment_${t} COMMAND experiment_${t})
  set_tests_properties(experiment_${t} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600)
endforeach()
set_tests_properties(experiment_external_numpy PROPERTIES LABELS "experiment;external")
set_tests_properties(experiment_external_torch_framework PROPERTIES LABELS
                     "experiment;external;torch")
set_tests_properties(experiment_external_worker PROPERTIES LABELS "experiment;external")
