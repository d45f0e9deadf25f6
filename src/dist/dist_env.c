/* Which launcher started this process, read from the environment: a
 * build without MPI must notice mpirun to say it cannot take part. */
#include <stdlib.h>

#include "dist/dist_internal.h"

static int env_int(const char *name) {
    const char *v = getenv(name);
    if (!v || !*v)
        return -1;
    char *end;
    long x = strtol(v, &end, 10);
    return *end || x < 0 || x > 1 << 24 ? -1 : (int)x;
}

void dist_launcher(int *rank, int *size) {
    static const char *const names[][2] = {
        {"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK"}, /* Open MPI          */
        {"PMI_SIZE", "PMI_RANK"},                         /* MPICH Hydra, PMI-1 */
        {"PMIX_SIZE", "PMIX_RANK"},                       /* PMIx launchers     */
    };
    *rank = 0;
    *size = 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        int s = env_int(names[i][0]);
        if (s > 0) {
            int r = env_int(names[i][1]);
            *size = s;
            *rank = r >= 0 ? r : 0;
            return;
        }
    }
}
