# tapestry_layer(NAME SOURCES src... USES target... [PRIVATE target...]): the library of one
# folder. It links only the folders below it (USES). NAME_link_check links every object of it
# (whole archive) against those alone, so a call into a higher folder fails the build; the test
# `layering` checks every #include against the table in docs/architecture.md.
function(tapestry_layer name)
  cmake_parse_arguments(L "" "" "SOURCES;USES;PRIVATE" ${ARGN})
  add_library(${name} STATIC ${L_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PUBLIC ${L_USES})
  if(L_PRIVATE)
    target_link_libraries(${name} PRIVATE ${L_PRIVATE})
  endif()
  target_compile_options(${name} PRIVATE ${TAPESTRY_WARNINGS})
  add_executable(${name}_link_check ${PROJECT_SOURCE_DIR}/cmake/link_check.cpp)
  target_link_libraries(${name}_link_check PRIVATE "$<LINK_LIBRARY:WHOLE_ARCHIVE,${name}>")
endfunction()
