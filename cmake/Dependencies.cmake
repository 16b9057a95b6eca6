# Every third-party library comes from the system (Debian's -dev packages, Homebrew on macOS) through
# find_package; nothing is vendored or downloaded. GoogleTest is looked up only when tests are built.
#
# DUALTRACK_PORTABLE (on for `pip wheel` / `pip install .`) makes an executable that needs none of
# them at run time: fmt and toml++ compiled in (their header-only / single-implementation modes),
# OpenSSL's libcrypto and zlib linked statically, and on Linux libstdc++ and libgcc too. The wheel
# then installs and runs on a machine without a compiler or the dev packages.
option(DUALTRACK_PORTABLE "Link third-party libraries statically (self-contained wheels)" ${SKBUILD})
if(DUALTRACK_PORTABLE)
  set(OPENSSL_USE_STATIC_LIBS TRUE)
  set(ZLIB_USE_STATIC_LIBS ON)
endif()

# A missing library stops the configure step with the command that installs it.
function(dualtrack_require package apt brew)
  find_package(${package} ${ARGN} QUIET)
  if(NOT ${package}_FOUND)
    message(FATAL_ERROR
      "dualtrack needs ${package} to build. Install it:\n"
      "  Debian/Ubuntu: sudo apt-get install ${apt}\n"
      "  macOS:         brew install ${brew}\n"
      "or run scripts/setup.sh, which installs every dependency (scripts/deps/).")
  endif()
endfunction()

dualtrack_require(fmt libfmt-dev fmt)
dualtrack_require(CLI11 libcli11-dev cli11)
dualtrack_require(nlohmann_json nlohmann-json3-dev nlohmann-json 3.10)
dualtrack_require(tomlplusplus libtomlplusplus-dev tomlplusplus)
dualtrack_require(OpenSSL libssl-dev openssl@3 COMPONENTS Crypto)
dualtrack_require(ZLIB zlib1g-dev zlib)
find_package(Threads REQUIRED)

add_library(dualtrack_deps INTERFACE)
target_link_libraries(dualtrack_deps INTERFACE
  CLI11::CLI11 nlohmann_json::nlohmann_json OpenSSL::Crypto ZLIB::ZLIB Threads::Threads)
if(DUALTRACK_PORTABLE)
  # toml++ is compiled once, in src/util/toml_impl.cc (TOML_IMPLEMENTATION), from its headers.
  get_target_property(_toml_include tomlplusplus::tomlplusplus INTERFACE_INCLUDE_DIRECTORIES)
  target_include_directories(dualtrack_deps INTERFACE ${_toml_include})
  target_compile_definitions(dualtrack_deps INTERFACE TOML_HEADER_ONLY=0 DUALTRACK_TOML_IMPL=1)
  target_link_libraries(dualtrack_deps INTERFACE fmt::fmt-header-only ${CMAKE_DL_LIBS})
  if(CMAKE_SYSTEM_NAME STREQUAL "Linux" AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_link_options(dualtrack_deps INTERFACE -static-libstdc++ -static-libgcc)
  endif()
else()
  target_link_libraries(dualtrack_deps INTERFACE fmt::fmt tomlplusplus::tomlplusplus)
endif()

# jemalloc (Debian's libjemalloc-dev), when present, is the executable's allocator on Linux: a scan
# allocates and frees millions of small objects on several threads, and glibc's malloc spent 7-8 %
# of the scan benchmark's wall time more on them (docs/benchmarks.md). Optional: without it the
# system allocator serves. Never under the sanitizers (ASan brings its own allocator); macOS keeps
# the system's.
set(DUALTRACK_JEMALLOC AUTO CACHE STRING "Link jemalloc into the executable: AUTO (Linux, when found), ON or OFF")
set_property(CACHE DUALTRACK_JEMALLOC PROPERTY STRINGS AUTO ON OFF)
add_library(dualtrack_allocator INTERFACE)
if(NOT DUALTRACK_SANITIZE AND (DUALTRACK_JEMALLOC STREQUAL "ON" OR
   (DUALTRACK_JEMALLOC STREQUAL "AUTO" AND CMAKE_SYSTEM_NAME STREQUAL "Linux")))
  if(DUALTRACK_PORTABLE)
    # The wheel must run where jemalloc is not installed: its position-independent archive.
    find_library(DUALTRACK_JEMALLOC_LIB NAMES jemalloc_pic.a libjemalloc_pic.a jemalloc.a libjemalloc.a)
  else()
    find_library(DUALTRACK_JEMALLOC_LIB NAMES jemalloc)
  endif()
  if(DUALTRACK_JEMALLOC_LIB)
    message(STATUS "dualtrack: allocator jemalloc (${DUALTRACK_JEMALLOC_LIB})")
    target_link_libraries(dualtrack_allocator INTERFACE ${DUALTRACK_JEMALLOC_LIB} Threads::Threads
                          ${CMAKE_DL_LIBS} m)
  elseif(DUALTRACK_JEMALLOC STREQUAL "ON")
    message(FATAL_ERROR "DUALTRACK_JEMALLOC=ON but jemalloc was not found:\n"
                        "  Debian/Ubuntu: sudo apt-get install libjemalloc-dev")
  else()
    message(STATUS "dualtrack: allocator: the system's (install libjemalloc-dev for a faster scan)")
  endif()
endif()
