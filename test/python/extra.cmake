# The Python package's pytest suite against the module the release build compiled in place
# (python/CMakeLists.txt: build/<preset>/python holds the package), in the project's virtual
# environment (scripts/python-venv.sh). scripts/test.sh configures the release build with
# ATTNDEV_PYTHON=ON and that environment's Python; a build without the module has an entry that
# says SKIPPED and why (it is never silently absent). The packaging check (`pip install .`) is
# scripts/test.sh's, after ctest (test/python/run.sh --installed).
if(TARGET attndev AND TARGET _core)
  add_test(NAME python_package
           COMMAND ${ATTNDEV_PYTHON_INTERPRETER} -m pytest -q -p no:cacheprovider
           WORKING_DIRECTORY ${CMAKE_CURRENT_LIST_DIR})
  set_tests_properties(python_package PROPERTIES LABELS python TIMEOUT 900
                       ENVIRONMENT "PYTHONPATH=${CMAKE_BINARY_DIR}/python;ATTNDEV_BIN=$<TARGET_FILE:attndev>")
elseif(TARGET attndev)
  add_test(NAME python_package
           COMMAND sh -c "echo 'python_package: SKIPPED: the Python module is not built here: configure with -DATTNDEV_PYTHON=ON -DPython_EXECUTABLE=\$(scripts/python-venv.sh) (scripts/test.sh does), or run test/python/run.sh'; exit 77")
  set_tests_properties(python_package PROPERTIES LABELS python SKIP_RETURN_CODE 77)
endif()
