cmake_minimum_required(VERSION 3.20)
# Runs two commands, asserts both exit with status 0 and print the same, non-empty first line
# (a pipe through `head` would hide the first command's exit status). Set by the caller:
#   first, second      the two commands, ';'-separated lists
execute_process(COMMAND ${first} RESULT_VARIABLE status_a OUTPUT_VARIABLE out_a ERROR_VARIABLE err_a)
execute_process(COMMAND ${second} RESULT_VARIABLE status_b OUTPUT_VARIABLE out_b ERROR_VARIABLE err_b)
foreach(side a b)
  if(NOT "${status_${side}}" STREQUAL "0")
    message(FATAL_ERROR "command ${side} exited with ${status_${side}}\n${err_${side}}")
  endif()
  string(REGEX MATCH "^[^\n]*" line_${side} "${out_${side}}")
endforeach()
if("${line_a}" STREQUAL "")
  message(FATAL_ERROR "the first command printed nothing\n${err_a}")
endif()
if(NOT "${line_a}" STREQUAL "${line_b}")
  message(FATAL_ERROR "first lines differ:\n  ${line_a}\n  ${line_b}")
endif()
