#include <string>
bool LoadObj(const std::string& path) { return !path.empty(); }
