# One ctest per GoogleTest suite, not per test (tests/CMakeLists.txt).
#
# Every ctest test is a process, and a process of the sanitized test binaries costs before its
# first test runs: about 0.4 s for trainlock_tests and 1.7 s for validator_tests (ASan and
# LibTorch loading) on the 2-core CI machine. Per test that was 1,610 + 591 process starts, about
# 1,600 s of CPU of each CI run; per suite it is 193 + 98. A suite's tests run in one process in
# declaration order, as GoogleTest runs a whole binary; one failing test fails its suite, and
# the suite's output names it.
#
# Discovery is gtest_discover_tests' own method: once the binary is linked, it is asked for its
# tests (--gtest_list_tests) and a ctest file registering one test per suite is written
# (cmake/WriteGTestSuites.cmake); ctest includes that file. Each suite runs through
# tests/run_gtest_suite.sh, which reports a suite that ran and skipped every test as skipped
# (exit 77) and otherwise passes the binary's exit code through.
#
#   trainlock_gtest_suites(TARGET [TIMEOUT SECONDS])
function(trainlock_gtest_suites target)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "TIMEOUT" "")
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 900)
  endif()
  set(ctest_file ${CMAKE_CURRENT_BINARY_DIR}/${target}_suites.cmake)
  add_custom_command(TARGET ${target} POST_BUILD
    COMMAND ${CMAKE_COMMAND} -DBINARY=$<TARGET_FILE:${target}> -DOUTPUT=${ctest_file}
            -DRUNNER=${PROJECT_SOURCE_DIR}/tests/run_gtest_suite.sh -DTIMEOUT=${ARG_TIMEOUT}
            -P ${PROJECT_SOURCE_DIR}/cmake/WriteGTestSuites.cmake
    COMMENT "Registering ${target}'s suites with ctest"
    VERBATIM)
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${ctest_file})
endfunction()
