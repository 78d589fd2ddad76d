# Warnings for our own targets only (third-party headers are SYSTEM includes).
function(tw_target_warnings target)
  # -Werror=unused-result: a Status or Result ([[nodiscard]]) is handled, or discarded with (void)
  # and a comment saying why.
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers
                         -Werror=unused-result)
endfunction()

# A thinwire library: sources relative to its folder, includes rooted at the repo root.
function(tw_library target)
  cmake_parse_arguments(ARG "" "" "SOURCES;PUBLIC_DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(${target} STATIC ${ARG_SOURCES})
  target_include_directories(${target} PUBLIC ${TW_ROOT})
  target_link_libraries(${target} PUBLIC ${ARG_PUBLIC_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
  tw_target_warnings(${target})
endfunction()
