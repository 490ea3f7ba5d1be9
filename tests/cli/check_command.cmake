cmake_minimum_required(VERSION 3.20)
# Runs one command and asserts both its exit status and its output, so that a command that
# prints the right words and then fails (or crashes) does not pass. CTest's own pass-on-a-
# regular-expression test property ignores the exit status, hence this script. Read by the scripts that
# kiln_cli_test() (tests/CMakeLists.txt) generates, which set:
#   command            the command and its arguments
#   expected_status    the exit status it must return
#   stdout_patterns    regular expressions stdout must match, each somewhere
#   stderr_patterns    regular expressions stderr must match, each somewhere
#   absent_patterns    regular expressions neither stdout nor stderr may match
#   working_directory  where to run it
execute_process(COMMAND ${command}
  WORKING_DIRECTORY "${working_directory}"
  RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(JOIN " " shown ${command})
if(NOT "${status}" STREQUAL "${expected_status}")
  message(FATAL_ERROR "`${shown}` exited with ${status}, expected ${expected_status}\n"
                      "--- stdout\n${out}--- stderr\n${err}")
endif()
foreach(pattern IN LISTS stdout_patterns)
  if(NOT "${out}" MATCHES "${pattern}")
    message(FATAL_ERROR "stdout of `${shown}` does not match: ${pattern}\n--- stdout\n${out}")
  endif()
endforeach()
foreach(pattern IN LISTS stderr_patterns)
  if(NOT "${err}" MATCHES "${pattern}")
    message(FATAL_ERROR "stderr of `${shown}` does not match: ${pattern}\n--- stderr\n${err}")
  endif()
endforeach()
foreach(pattern IN LISTS absent_patterns)
  if("${out}${err}" MATCHES "${pattern}")
    message(FATAL_ERROR "output of `${shown}` matches what it must not: ${pattern}\n"
                        "--- stdout\n${out}--- stderr\n${err}")
  endif()
endforeach()
