# The Python package's pytest suite (test/python/run.sh: its own virtual environment, packages
# from PyPI). SKIP_RETURN_CODE 77: only when PyPI cannot be reached (the script says so); a build or
# test failure fails. The first run builds the extension module (the libraries again, with
# -fPIC, in build/python/): minutes; later runs rebuild only what changed.
if(TARGET attndev)
  add_test(NAME python_package
           COMMAND ${CMAKE_CURRENT_LIST_DIR}/run.sh $<TARGET_FILE:attndev>)
  # RUN_SERIAL: pip's build of the extension wants every CPU, and build/venv-py is one folder.
  set_tests_properties(python_package PROPERTIES LABELS python SKIP_RETURN_CODE 77 TIMEOUT 1800
                       RUN_SERIAL TRUE)
endif()
