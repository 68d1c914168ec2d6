# The real-cluster test: a one-node SLURM (munged, slurmctld, slurmd) started on this host by
# scripts/slurm/local-cluster.sh, a 4-task array, a cancelled task and its resubmission.
# Exit 77 = SKIPPED (SLURM cannot start here: not root, packages missing); never a silent pass.
find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND AND TARGET attndev)
  add_test(NAME slurm_cluster
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/cluster_test.py
                   --attndev $<TARGET_FILE:attndev>
                   --cluster-script ${PROJECT_SOURCE_DIR}/scripts/slurm/local-cluster.sh)
  # Not RUN_SERIAL: its 25 s are mostly waits on the daemons and the queue (about 30% of a core
  # measured), so other tests run beside it; its tasks' sweeps are small and only slower then.
  # The test stops itself at 240 s, before ctest's timeout, so that its daemons are always
  # stopped by the test itself.
  set_tests_properties(slurm_cluster PROPERTIES LABELS slurm SKIP_RETURN_CODE 77 TIMEOUT 300)
endif()
