# `attndev plot` drawing its figure end to end: a real sweep, then PNG, SVG and PDF through the
# project's build/venv-plot (scripts/plot-venv.sh creates it from PyPI on first use). Exit 77 =
# SKIPPED only when PyPI cannot be reached; the pivot's numbers are test/cli/test_cli_plot.cpp's.
if(TARGET attndev)
  add_test(NAME plot_draw COMMAND ${CMAKE_CURRENT_LIST_DIR}/draw_test.sh $<TARGET_FILE:attndev>)
  # The first run installs matplotlib into build/venv-plot, one folder: a test that may create it
  # takes the lock venv-plot (not RUN_SERIAL, which also held every other test back while this
  # one mostly waited: about a third of a core over its 16-20 s).
  set_tests_properties(plot_draw PROPERTIES LABELS "plot;python" SKIP_RETURN_CODE 77 TIMEOUT 900
                       RESOURCE_LOCK venv-plot)
endif()
