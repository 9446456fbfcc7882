# Test step (cmake -P; tests/install/CMakeLists.txt runs one per installed header): compiles HEADER from the installed
# include folder INCLUDE_DIR on its own (C++20, -Wall -Wextra -Werror), with nothing on the include path but that
# folder and the CUDA toolkit's (CUDA_INCLUDE_DIRS), and fails when it reads any header that is not Canopy's
# installed one, the CUDA runtime's or the C and C++ standard libraries' (STD_DIRS: the compiler's own folders, and
# the C library's files at the top of /usr/include): no Boost, LLVM/Clang, fmt, nlohmann-json, OpenSSL, nor cuda.h
# (the driver API) or nvrtc.h. With CLOSURE=ON it also checks that the installed headers are exactly the ones HEADER
# reads (canopy.hpp: nothing missing, nothing extra). Lists are '|'-separated; WORK_DIR gets the test's files.
cmake_minimum_required(VERSION 3.25)
foreach(var CXX INCLUDE_DIR HEADER CUDA_INCLUDE_DIRS STD_DIRS WORK_DIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check_installed_header.cmake needs -D${var}=...")
  endif()
endforeach()
string(REPLACE "|" ";" CUDA_INCLUDE_DIRS "${CUDA_INCLUDE_DIRS}")
string(REPLACE "|" ";" STD_DIRS "${STD_DIRS}")
set(denied_cuda_headers cuda.h cudaTypedefs.h nvrtc.h nccl.h nvml.h)

string(MAKE_C_IDENTIFIER "${HEADER}" stem)
file(MAKE_DIRECTORY "${WORK_DIR}")
set(unit "${WORK_DIR}/${stem}.cpp")
set(deps_file "${WORK_DIR}/${stem}.d")
file(WRITE "${unit}" "#include \"${HEADER}\"  // alone, as an application would include it\n")
set(include_flags "-I${INCLUDE_DIR}")
foreach(dir IN LISTS CUDA_INCLUDE_DIRS)
  list(APPEND include_flags "-isystem" "${dir}")
endforeach()
execute_process(COMMAND "${CXX}" -std=c++20 -fsyntax-only -Wall -Wextra -Werror ${include_flags} -MD -MF "${deps_file}"
                        "${unit}"
                RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${HEADER} does not compile on its own from ${INCLUDE_DIR}:\n${out}")
endif()

# The dependency file, make's syntax: "target: dep dep \<newline> dep ...".
file(READ "${deps_file}" deps)
string(REGEX REPLACE "^[^:]*:" "" deps "${deps}")
string(REPLACE "\\\n" " " deps "${deps}")
string(REGEX REPLACE "[ \t\n]+" ";" deps "${deps}")
list(FILTER deps EXCLUDE REGEX "^$")

file(REAL_PATH "${INCLUDE_DIR}" include_root)
set(cuda_roots "")
foreach(dir IN LISTS CUDA_INCLUDE_DIRS)
  file(REAL_PATH "${dir}" real)
  list(APPEND cuda_roots "${real}")
endforeach()
set(std_roots "")
foreach(dir IN LISTS STD_DIRS)
  file(REAL_PATH "${dir}" real)
  if(NOT real MATCHES "^/usr(/local)?/include$")  # those two hold every library's headers: judged file by file below
    list(APPEND std_roots "${real}")
  endif()
endforeach()
list(APPEND std_roots /usr/include/linux /usr/include/asm-generic)  # Linux's headers, read by the C library's

# under(PATH ROOTS OUT): OUT is ON when PATH lies inside one of ROOTS.
function(under path roots out)
  set(${out} OFF PARENT_SCOPE)
  foreach(root IN LISTS roots)
    string(FIND "${path}" "${root}/" at)
    if(at EQUAL 0)
      set(${out} ON PARENT_SCOPE)
      return()
    endif()
  endforeach()
endfunction()

set(read_installed "")
set(foreign "")
foreach(dep IN LISTS deps)
  if(dep STREQUAL unit)
    continue()
  endif()
  file(REAL_PATH "${dep}" path)
  get_filename_component(name "${path}" NAME)
  get_filename_component(folder "${path}" DIRECTORY)
  under("${path}" "${include_root}" is_installed)
  under("${path}" "${cuda_roots}" is_cuda)
  under("${path}" "${std_roots}" is_std)
  if(is_installed)
    file(RELATIVE_PATH relative "${include_root}" "${path}")
    list(APPEND read_installed "${relative}")
  elseif(NOT (is_cuda AND NOT name IN_LIST denied_cuda_headers) AND NOT is_std AND NOT folder STREQUAL "/usr/include")
    list(APPEND foreign "${path}")
  endif()
endforeach()
if(foreign)
  list(JOIN foreign "\n  " foreign)
  message(FATAL_ERROR "${HEADER} reads headers an application should not need (only Canopy's, the CUDA runtime's "
                      "and the standard library's are allowed):\n  ${foreign}")
endif()

if(CLOSURE)
  file(GLOB_RECURSE installed RELATIVE "${include_root}" "${include_root}/*")
  list(APPEND read_installed "${HEADER}")
  list(REMOVE_DUPLICATES read_installed)
  set(missing ${read_installed})
  list(REMOVE_ITEM missing ${installed})
  set(extra ${installed})
  list(REMOVE_ITEM extra ${read_installed})
  if(missing OR extra)
    message(FATAL_ERROR "the installed headers are not the ones ${HEADER} reads: missing (read, not installed): "
                        "${missing}; extra (installed, never read): ${extra}. Update CANOPY_PUBLIC_HEADERS in "
                        "cmake/install_rules.cmake")
  endif()
  list(LENGTH installed count)
  message(STATUS "${count} installed headers, all read by ${HEADER}")
endif()
