# `cmake -D GPU_TESTS=BINARY -D PATTERNS=P1;P2;... -P gpu_tiers_check.cmake`: the ctest gpu_tiers.every_quick_pattern
# (label cpu). Fails naming each pattern of the quick tier (gpu_tiers.cmake) that matches no test of the GPU test
# binary (a test renamed or removed would otherwise leave the quick tier short without a word), and when the quick tier
# is empty.
if(NOT PATTERNS)
  message(FATAL_ERROR "gpu_tiers.cmake lists no quick test")
endif()
set(stale "")
set(total 0)
foreach(pattern IN LISTS PATTERNS)
  execute_process(COMMAND "${GPU_TESTS}" --gtest_list_tests "--gtest_filter=${pattern}" OUTPUT_VARIABLE listed
                  RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "${GPU_TESTS} --gtest_list_tests failed (${status})")
  endif()
  string(REGEX MATCHALL "\n  [^ \n]+" names "${listed}")
  list(LENGTH names n)
  math(EXPR total "${total} + ${n}")
  if(n EQUAL 0)
    list(APPEND stale "${pattern}")
  endif()
endforeach()
if(stale)
  message(FATAL_ERROR "tests/gpu_tiers.cmake: these quick-tier patterns match no GPU test (renamed or removed?): "
                      "${stale}")
endif()
message(STATUS "gpu_tiers: every quick pattern matches a test; ${total} quick tests")
