# The CLI test runs the attndev binary: build it first.
if(TARGET train_tests AND TARGET attndev)
  add_dependencies(train_tests attndev)
endif()
