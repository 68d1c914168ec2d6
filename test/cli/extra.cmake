# The cli tests run the attndev binary: build it before them.
foreach(t cli_tests)
  if(TARGET ${t} AND TARGET attndev)
    add_dependencies(${t} attndev)
  endif()
endforeach()
