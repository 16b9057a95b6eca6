// The few facts about the running process that differ between Linux and macOS.
#pragma once

#include <filesystem>
#include <optional>

namespace dt {

// Absolute path of the running executable (/proc/self/exe on Linux, _NSGetExecutablePath on macOS).
std::optional<std::filesystem::path> CurrentExecutablePath();

// Whether a file descriptor is a terminal (for colour and progress lines).
bool IsTerminal(int fd);

}  // namespace dt
