# Use ccache when present: compile time on two cores is the scarce resource.
find_program(TW_CCACHE ccache)
if(TW_CCACHE)
  set(CMAKE_CXX_COMPILER_LAUNCHER ${TW_CCACHE})
endif()
