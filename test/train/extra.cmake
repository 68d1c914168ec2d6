# The CLI test runs the attndev binary: build it first.
if(TARGET train_test_cmd_train AND TARGET attndev)
  add_dependencies(train_test_cmd_train attndev)
endif()
