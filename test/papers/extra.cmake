# Smoke tests of the paper configs: each config in configs/paper/ (and the attribution analysis)
# that carries a "_smoke" list of axis overrides is run by `attndev run` with those overrides into
# a fresh temp folder; the test passes when the run exits 0 and wrote rows, all with status ok
# (run_smoke.cmake). Label `papers`; `ctest -L papers` runs them (a few seconds each).
if(TARGET attndev)
  file(GLOB attndev_paper_configs CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/configs/paper/*.json)
  list(APPEND attndev_paper_configs ${PROJECT_SOURCE_DIR}/configs/analysis/attribution.json)
  foreach(cfg ${attndev_paper_configs})
    if(NOT EXISTS ${cfg})
      continue()
    endif()
    file(READ ${cfg} cfg_text)
    string(JSON smoke_type ERROR_VARIABLE no_smoke TYPE "${cfg_text}" _smoke)
    if(no_smoke OR NOT smoke_type STREQUAL "ARRAY")
      continue()  # not a forward-pass config (the training study has its own --quick test)
    endif()
    string(JSON n LENGTH "${cfg_text}" _smoke)
    set(overrides "")
    math(EXPR last "${n} - 1")
    foreach(i RANGE ${last})
      string(JSON value GET "${cfg_text}" _smoke ${i})
      string(APPEND overrides "-a|${value}|")
    endforeach()
    get_filename_component(stem ${cfg} NAME_WE)
    add_test(NAME papers_smoke_${stem}
             COMMAND ${CMAKE_COMMAND} -DATTNDEV=$<TARGET_FILE:attndev> -DCONFIG=${cfg}
                     "-DOVERRIDES=${overrides}" -DOUT=${PROJECT_BINARY_DIR}/papers_smoke/${stem}
                     -P ${CMAKE_CURRENT_LIST_DIR}/run_smoke.cmake)
    set_tests_properties(papers_smoke_${stem} PROPERTIES LABELS papers TIMEOUT 300)
  endforeach()
endif()
