/* tport serve in a build without libmicrohttpd: say so. */
#include <string.h>

#include "../commands.h"

int cmd_serve(int argc, char **argv) {
    (void)argc;
    (void)argv;
    return tool_fail(2, "serve: this build has no HTTP server: libmicrohttpd (Debian libmicrohttpd-dev) "
                        "and cJSON (libcjson-dev) were not found when tport was built");
}
