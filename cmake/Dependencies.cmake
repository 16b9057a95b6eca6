# Every third-party library comes from the system (Debian's -dev packages, Homebrew on macOS) through
# find_package; nothing is vendored or downloaded. GoogleTest is looked up only when tests are built.
find_package(fmt REQUIRED)
find_package(CLI11 REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(tomlplusplus REQUIRED)
find_package(OpenSSL REQUIRED COMPONENTS Crypto)
find_package(ZLIB REQUIRED)
find_package(Threads REQUIRED)

add_library(dualtrack_deps INTERFACE)
target_link_libraries(dualtrack_deps INTERFACE
  fmt::fmt CLI11::CLI11 nlohmann_json::nlohmann_json tomlplusplus::tomlplusplus
  OpenSSL::Crypto ZLIB::ZLIB Threads::Threads)
