// The one translation unit that compiles toml++'s implementation when the build links nothing
// from the system at run time (DUALTRACK_PORTABLE); otherwise the system's libtomlplusplus has it.
#if defined(DUALTRACK_TOML_IMPL)
#define TOML_IMPLEMENTATION
#include <toml++/toml.h>
#endif
