# The cli tests run the attndev binary: build it before them.
foreach(t cli_test_cli_core cli_test_cli_run cli_test_cli_reliability cli_test_cli_messages)
  if(TARGET ${t} AND TARGET attndev)
    add_dependencies(${t} attndev)
  endif()
endforeach()
