/* The build without MPI: the commands run as one process, as always; one
 * started by mpirun says it cannot take part instead of running N copies. */
#include <stdio.h>

#include "dist/dist.h"
#include "dist/dist_internal.h"

struct tport_dist {
    int unused;
};

int tport_dist_begin(const char *cmd, int *argc, char **argv, tport_dist **out) {
    *out = NULL;
    int rank = 0, size = 0;
    dist_launcher(&rank, &size);
    if (size > 1) {
        if (rank == 0)
            fprintf(stderr, "tport: %s: started by mpirun with %d ranks, but this tport was built without MPI "
                    "(install libopenmpi-dev or libmpich-dev and rebuild)\n", cmd, size);
        return 2;
    }
    if (size == 1)
        fprintf(stderr, "tport: %s: note: this tport was built without MPI; running as one process\n", cmd);
    dist_opts o;
    return dist_take_options(cmd, argc, argv, 1, false, &o);
}

int tport_dist_start(tport_dist *d, const char *model, const tport_model_params *mp, bool *stop) {
    (void)d, (void)model, (void)mp;
    *stop = false;
    return 0;
}

tport_model *tport_dist_model_load(tport_dist *d, const char *path, const tport_model_params *mp) {
    (void)d;
    return tport_model_load(path, mp);
}

tport_session *tport_dist_session_new(tport_dist *d, tport_model *m, const tport_session_params *p) {
    (void)d;
    return tport_session_new(m, p);
}

tport_status tport_dist_eval(tport_dist *d, tport_session *s, const tport_token *ids, int32_t n) {
    (void)d;
    return tport_session_eval(s, ids, n);
}

void tport_dist_reset(tport_dist *d, tport_session *s) {
    (void)d;
    tport_session_reset(s);
}

int tport_dist_end(tport_dist *d, int status) {
    (void)d;
    return status;
}
