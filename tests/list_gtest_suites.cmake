# Run after a GoogleTest binary is built (tests/CMakeLists.txt, tw_gtest_suites): lists its test
# suites and writes OUT, a CTest include file with one entry per suite, PREFIX + the suite's name,
# that runs the suite's tests in one process (--gtest_filter=SUITE.*). Properties come from
# PROPS_FILE, which sets the list `props` and is included for each entry.
# Variables: EXE, LAUNCHER (its words separated by '|'; may be empty), PREFIX, OUT, PROPS_FILE.
string(REPLACE "|" ";" LAUNCHER "${LAUNCHER}")
execute_process(COMMAND ${LAUNCHER} ${EXE} --gtest_list_tests OUTPUT_VARIABLE listing RESULT_VARIABLE rc
                TIMEOUT 60)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${EXE} --gtest_list_tests failed (${rc}): ${listing}")
endif()
string(REPLACE "\n" ";" lines "${listing}")
set(text "# Written by tests/list_gtest_suites.cmake from ${EXE}.\ninclude(\"${PROPS_FILE}\")\n")
foreach(line IN LISTS lines)
  # A suite's line starts in column 0 and ends with '.', perhaps followed by "  # TypeParam = ...".
  if(line MATCHES "^([^ #][^ ]*)\\.( .*)?$")
    set(suite "${CMAKE_MATCH_1}")
    set(name "${PREFIX}${suite}")
    string(APPEND text "add_test(\"${name}\" ${LAUNCHER} \"${EXE}\" \"--gtest_filter=${suite}.*\")\n"
                       "set_tests_properties(\"${name}\" PROPERTIES \${props})\n")
  endif()
endforeach()
file(WRITE "${OUT}" "${text}")
