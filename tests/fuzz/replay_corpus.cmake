cmake_minimum_required(VERSION 3.20)
# Replays a fuzz corpus through `kiln egg` in the ordinary build (no clang needed), with the run
# limits the fuzz targets use: every program must run (status 0) or fail with a reported error
# (status 1); a crash, a hang or an internal error (status 70) fails the test and names the file.
#   KILN     the kiln binary
#   CORPUS   the corpus folder
#   ARGS     '|'-separated arguments put before the program (e.g. --graph-sorts and rule files)
string(REPLACE "|" ";" args "${ARGS}")
file(GLOB programs "${CORPUS}/*")
list(SORT programs)
list(LENGTH programs count)
if(count EQUAL 0)
  message(FATAL_ERROR "no programs in ${CORPUS}")
endif()
set(replayed 0)
foreach(program IN LISTS programs)
  file(READ "${program}" text)
  # The fuzz targets skip programs that read other files; so does the replay.
  string(FIND "${text}" "include" includes)
  if(NOT includes EQUAL -1)
    continue()
  endif()
  execute_process(COMMAND "${KILN}" egg --max-iterations 20 --max-rows 20000 --max-seconds 0.5
                          --match-limit 10000 ${args} "${program}"
    RESULT_VARIABLE status OUTPUT_QUIET ERROR_VARIABLE err TIMEOUT 30)
  if(NOT status STREQUAL "0" AND NOT status STREQUAL "1")
    message(FATAL_ERROR "kiln egg ${program} ended with ${status}:\n${err}")
  endif()
  math(EXPR replayed "${replayed} + 1")
endforeach()
message(STATUS "${replayed} of ${count} programs replayed")
