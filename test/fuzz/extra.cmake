# The fuzz targets' seed corpora and regression inputs (fuzz/seeds/<name>/, crash inputs once
# found are kept there as regress-*) replayed through LLVMFuzzerTestOneInput by a plain main
# (fuzz/replay_main.cpp), with any compiler: every build runs them, the sanitizer build included.
# scripts/fuzz.sh is what searches for new inputs (clang, libFuzzer).
file(GLOB attndev_fuzz_sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/fuzz/fuzz_*.cpp)
foreach(src ${attndev_fuzz_sources})
  get_filename_component(target ${src} NAME_WE)
  string(REGEX REPLACE "^fuzz_" "" name ${target})
  add_executable(fuzz_replay_${name} ${src} ${PROJECT_SOURCE_DIR}/fuzz/replay_main.cpp)
  target_link_libraries(fuzz_replay_${name} PRIVATE ${ATTNDEV_TEST_LIBS})
  target_include_directories(fuzz_replay_${name} PRIVATE ${PROJECT_SOURCE_DIR}/lib)
  attndev_test_optimization(fuzz_replay_${name} fuzz)
  set(inputs ${PROJECT_SOURCE_DIR}/fuzz/seeds/${name})
  if(name STREQUAL "config")
    # The shipped configs are the config target's seeds (scripts/fuzz.sh starts from them too).
    list(APPEND inputs ${PROJECT_SOURCE_DIR}/configs)
  endif()
  add_test(NAME fuzz_replay_${name} COMMAND fuzz_replay_${name} ${inputs})
  set_tests_properties(fuzz_replay_${name} PROPERTIES LABELS fuzz TIMEOUT 300)
endforeach()
