# Finds the chosen dependencies. Debian 12 packages provide all of them; the GPU machine lacks
# toml++'s CMake package, so TOMLPP_INCLUDE_DIR may point at a copy of the headers instead.
find_package(yaml-cpp REQUIRED)
find_package(OpenSSL REQUIRED)
find_package(CURL REQUIRED)
find_package(CLI11 REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(Threads REQUIRED)
find_package(ZLIB REQUIRED)

find_package(tomlplusplus 3 QUIET)
if(NOT tomlplusplus_FOUND)
  find_path(TOMLPP_INCLUDE_DIR toml++/toml.h
    HINTS ${CMAKE_SOURCE_DIR}/.toml /usr/include /usr/local/include REQUIRED)
  add_library(tomlplusplus_header_only INTERFACE)
  target_include_directories(tomlplusplus_header_only SYSTEM INTERFACE ${TOMLPP_INCLUDE_DIR})
  target_compile_definitions(tomlplusplus_header_only INTERFACE TOML_HEADER_ONLY=1)
  add_library(tomlplusplus::tomlplusplus ALIAS tomlplusplus_header_only)
  message(STATUS "toml++: header-only from ${TOMLPP_INCLUDE_DIR}")
endif()

# yaml-cpp's Debian package names its target yaml-cpp; newer releases use yaml-cpp::yaml-cpp.
if(TARGET yaml-cpp::yaml-cpp)
  set(TRAINLOCK_YAML_TARGET yaml-cpp::yaml-cpp)
else()
  set(TRAINLOCK_YAML_TARGET yaml-cpp)
endif()

# LibTorch is optional: only validators/ uses it. Debian's libtorch-dev installs a Torch
# CMake package; on the GPU machine pass -DCMAKE_PREFIX_PATH from torch.utils.cmake_prefix_path.
if(TRAINLOCK_VALIDATOR)
  find_package(Torch QUIET)
  if(Torch_FOUND)
    message(STATUS "LibTorch found: ${Torch_DIR}")
  else()
    message(STATUS "LibTorch not found: trainlock-validate will not be built")
  endif()
endif()
