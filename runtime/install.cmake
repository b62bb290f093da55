# runtime/install.cmake: what `cmake --install` lays out, and how other projects find it. Included at the
# end of the top-level CMakeLists.txt, once every target exists (targets are named, and each is optional).
#
#   bin/cclab                            the command-line tool; its RUNPATH $ORIGIN/../lib finds libcclab
#   lib/libcclab.so, lib/libnccl.so      the runtime under cclab's name and NCCL's (docs/drop-in.md)
#   lib/libcclab-sim.so                  the sim backend, loaded for CCLAB_BACKEND=sim
#   include/nccl.h, include/cclab/       the public headers
#   include/cclab/kernels/               the schedule headers custom algorithm plugins compile against
#   lib/cmake/cclab/                     find_package(cclab): cclab::cclab, cclab::nccl, cclab::headers
#   lib/pkgconfig/cclab.pc, nccl.pc      pkg-config --cflags --libs cclab (or nccl)
#
# Every installed path is relative to the tree itself (the executable's rpath to $ORIGIN, the CMake files
# to their own folder, the .pc files to ${pcfiledir}), so `cmake --install --prefix DIR` and a tree moved
# or unpacked elsewhere both work. tests/install/package_test.sh checks all of it.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(_cclab_pkg_dir ${CMAKE_INSTALL_LIBDIR}/cmake/cclab)

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

# ---- Libraries and headers, exported for find_package(cclab) -------------------------------------
# The shared libraries link their static parts (kernels, base, bootstrap, graph, trace, the static
# CUDA runtime) PRIVATE, so their link interface names only cclab::headers and Threads::Threads.
set(_cclab_exported "")
foreach(_t_name IN ITEMS cclab_headers:headers cclab_runtime:cclab cclab_nccl:nccl)
  string(REPLACE ":" ";" _t_name "${_t_name}")
  list(GET _t_name 0 _t)
  list(GET _t_name 1 _name)
  if(TARGET ${_t})
    set_target_properties(${_t} PROPERTIES EXPORT_NAME ${_name})
    list(APPEND _cclab_exported ${_t})
  endif()
endforeach()
foreach(_t IN ITEMS cclab_runtime cclab_nccl cclab_cli)
  if(TARGET ${_t})
    # Dependencies outside the system's folders (an MPI or SimGrid in /opt) stay found once installed.
    set_target_properties(${_t} PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
  endif()
endforeach()
# cclab_headers' include folder is `include` (runtime/CMakeLists.txt); INCLUDES adds the other one.
set(_cclab_includes "")
if(NOT CMAKE_INSTALL_INCLUDEDIR STREQUAL "include")
  set(_cclab_includes INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endif()
install(FILES ${PROJECT_SOURCE_DIR}/runtime/include/nccl.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/runtime/include/cclab DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# The schedule headers, for custom algorithm plugins (kernels/custom.h, docs/custom-algorithms.md): they
# include each other as "kernels/x.h", so `-I <includedir>/cclab` finds them.
file(GLOB _cclab_kernel_headers ${PROJECT_SOURCE_DIR}/kernels/*.h)
install(FILES ${_cclab_kernel_headers} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/cclab/kernels)
if(_cclab_exported)
  install(TARGETS ${_cclab_exported} EXPORT cclab-targets
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} ${_cclab_includes})
  install(EXPORT cclab-targets NAMESPACE cclab:: DESTINATION ${_cclab_pkg_dir})
  configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/pkg/cclab-config.cmake.in
                                ${PROJECT_BINARY_DIR}/pkg/cclab-config.cmake INSTALL_DESTINATION ${_cclab_pkg_dir})
  # The soname's 0 is the major version: a library of another major version is another ABI.
  write_basic_package_version_file(${PROJECT_BINARY_DIR}/pkg/cclab-config-version.cmake
                                   VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
  install(FILES ${PROJECT_BINARY_DIR}/pkg/cclab-config.cmake ${PROJECT_BINARY_DIR}/pkg/cclab-config-version.cmake
          DESTINATION ${_cclab_pkg_dir})
endif()

# ---- The sim backend's plugin: next to the runtime, where CCLAB_BACKEND=sim looks for it ------------
if(TARGET cclab_sim_backend)
  set_target_properties(cclab_sim_backend PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
  install(TARGETS cclab_sim_backend LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()

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

# ---- pkg-config -----------------------------------------------------------------------------------
# _cclab_pkg_config(NAME LIBRARY VERSION DESCRIPTION): lib/pkgconfig/NAME.pc for -lLIBRARY.
_cclab_relative(_cclab_pc_to_prefix "${CMAKE_INSTALL_LIBDIR}/pkgconfig" ".")
if(NOT IS_ABSOLUTE "${_cclab_pc_to_prefix}")
  set(_cclab_pc_to_prefix "\${pcfiledir}/${_cclab_pc_to_prefix}")
endif()
function(_cclab_pkg_config PC_NAME PC_LIBRARY PC_VERSION PC_DESCRIPTION)
  set(PC_PREFIX "${_cclab_pc_to_prefix}")
  foreach(_dir IN ITEMS LIBDIR INCLUDEDIR)
    set(PC_${_dir} "${CMAKE_INSTALL_${_dir}}")
    if(NOT IS_ABSOLUTE "${PC_${_dir}}")
      set(PC_${_dir} "\${prefix}/${PC_${_dir}}")
    endif()
  endforeach()
  configure_file(${CMAKE_CURRENT_FUNCTION_LIST_DIR}/pkg/library.pc.in ${PROJECT_BINARY_DIR}/pkg/${PC_NAME}.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/pkg/${PC_NAME}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endfunction()
if(TARGET cclab_runtime)
  _cclab_pkg_config(cclab cclab ${PROJECT_VERSION}
                    "cclab: NCCL's API (nccl.h) and cclab's extensions (cclab/cclab.h), host, CUDA and SimGrid backends")
endif()
if(TARGET cclab_nccl)
  get_target_property(_cclab_nccl_version cclab_nccl VERSION)
  _cclab_pkg_config(nccl nccl ${_cclab_nccl_version}
                    "cclab in NCCL's place: collective communication primitives, NCCL ${_cclab_nccl_version}'s API")
endif()
