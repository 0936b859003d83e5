# Writes trainlock's bash, zsh and fish completion scripts into DIR, each as PROGRAM prints it
# (`trainlock completion SHELL`); run after PROGRAM is linked (cmake/Install.cmake).
# Usage: cmake -DPROGRAM=... -DDIR=... -P WriteCompletions.cmake
file(MAKE_DIRECTORY ${DIR})
# A sanitized build's leak check has nothing to say about a program that prints and exits.
set(ENV{ASAN_OPTIONS} "detect_leaks=0")
foreach(_pair "bash;trainlock" "zsh;_trainlock" "fish;trainlock.fish")
  list(GET _pair 0 _shell)
  list(GET _pair 1 _file)
  execute_process(COMMAND ${PROGRAM} completion ${_shell}
                  OUTPUT_FILE ${DIR}/${_file} RESULT_VARIABLE _result)
  if(NOT _result EQUAL 0)
    message(FATAL_ERROR "${PROGRAM} completion ${_shell}: exit ${_result}")
  endif()
endforeach()
