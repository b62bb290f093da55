# runtime/install.cmake: what `cmake --install` lays out. Included at the end of the top-level
# CMakeLists.txt, once every target exists (targets are named, and each is optional).
#
#   bin/cclab                            the command-line tool; its RUNPATH $ORIGIN/../lib finds libcclab
#   lib/libcclab.so, lib/libnccl.so      the runtime under cclab's name and NCCL's (docs/drop-in.md)
#   include/nccl.h, include/cclab/       the public headers
include(GNUInstallDirs)

# _cclab_relative(OUT FROM TO): the path from install folder FROM to install folder TO (both relative to
# the prefix, as GNUInstallDirs gives them), or TO's absolute path when either was set absolute.
function(_cclab_relative out from to)
  if(IS_ABSOLUTE "${from}" OR IS_ABSOLUTE "${to}")
    set(_path "${to}")
    if(NOT IS_ABSOLUTE "${to}")
      set(_path "${CMAKE_INSTALL_PREFIX}/${to}")
    endif()
  else()
    file(RELATIVE_PATH _path "/prefix/${from}" "/prefix/${to}")
    string(REGEX REPLACE "/$" "" _path "${_path}")
    if(_path STREQUAL "")
      set(_path ".")
    endif()
  endif()
  set(${out} "${_path}" PARENT_SCOPE)
endfunction()

# ---- Libraries and headers ----------------------------------------------------------------------
foreach(_t IN ITEMS cclab_runtime cclab_nccl cclab_cli)
  if(TARGET ${_t})
    # Dependencies outside the system's folders (an MPI or SimGrid in /opt) stay found once installed.
    set_target_properties(${_t} PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
  endif()
endforeach()
foreach(_t IN ITEMS cclab_runtime cclab_nccl)
  if(TARGET ${_t})
    install(TARGETS ${_t} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  endif()
endforeach()
install(FILES ${PROJECT_SOURCE_DIR}/runtime/include/nccl.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/runtime/include/cclab DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

# ---- The executable -------------------------------------------------------------------------------
if(TARGET cclab_cli)
  _cclab_relative(_cclab_bin_to_lib "${CMAKE_INSTALL_BINDIR}" "${CMAKE_INSTALL_LIBDIR}")
  if(NOT IS_ABSOLUTE "${_cclab_bin_to_lib}")
    set(_cclab_bin_to_lib "$ORIGIN/${_cclab_bin_to_lib}")
  endif()
  # Only the installed copy: the build tree's executable keeps the rpath CMake gives it there.
  set_target_properties(cclab_cli PROPERTIES INSTALL_RPATH "${_cclab_bin_to_lib}")
  install(TARGETS cclab_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
