# Validation against real implementations (docs/validation.md). Python tests, registered with
# add_test; exit 77 is SKIPPED (never a silent pass).
#   validation_report  scripts/validation_report.py on a real `attndev run` whose external variant
#                      is the numpy implementation (no torch; python3 with numpy, else skipped),
#                      then on mutated copies: within/not within 5%, failed rows, --update
#   validation_torch   attndev match on outputs of PyTorch's CPU flash kernel, SDPA math backend and
#                      explicit expression (label torch): skipped unless ATTNDEV_TORCH_PYTHON (by
#                      default build/venv-torch/bin/python3, made by scripts/validate-torch.sh)
#                      imports torch
find_package(Python3 COMPONENTS Interpreter)
set(ATTNDEV_TORCH_PYTHON "${PROJECT_SOURCE_DIR}/build/venv-torch/bin/python3"
    CACHE FILEPATH "python3 with torch for the validation_torch test")
if(Python3_Interpreter_FOUND AND TARGET attndev)
  add_test(NAME validation_report
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/report_test.py
                   --attndev $<TARGET_FILE:attndev> --source ${PROJECT_SOURCE_DIR})
  set_tests_properties(validation_report PROPERTIES LABELS "validation;external"
                       SKIP_RETURN_CODE 77 TIMEOUT 300)
  add_test(NAME validation_torch
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/torch_test.py
                   --attndev $<TARGET_FILE:attndev> --source ${PROJECT_SOURCE_DIR}
                   --python ${ATTNDEV_TORCH_PYTHON})
  set_tests_properties(validation_torch PROPERTIES LABELS "validation;torch"
                       SKIP_RETURN_CODE 77 TIMEOUT 600)
endif()
