/* What optional parts this build has (set by CMake from the libraries it
 * found and the TPORT_<FORMAT> options; see the top CMakeLists.txt). */
#include "tport/tport.h"

#ifndef TPORT_BUILD_FEATURES
#define TPORT_BUILD_FEATURES ""
#endif

const char *tport_build_features(void) { return TPORT_BUILD_FEATURES; }
