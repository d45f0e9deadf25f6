/* tport-backend-host: the helper process that runs one isolated plug-in
 * for a tensorport program (TPORT_BACKEND_ISOLATE).  All of it is in the
 * library (src/isolate/helper_main.c). */
#include "tport/registry.h"

int main(int argc, char **argv) {
    return tport_backend_host_main(argc, argv);
}
