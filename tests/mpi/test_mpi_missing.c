/* A build without MPI: started as if by mpirun (the launcher's variables
 * set), tport run says it was built without MPI instead of running N
 * copies; as one rank it runs as always.  In CI MPI must be there (.ci/run
 * installs it), so this build failing to find it is an error there. */
#include <stdlib.h>
#include <string.h>

#include "../tools/tool_run.h"
#include "../test_util.h"

int main(void) {
    const char *ci = getenv("CI");
    if (ci && !strcmp(ci, "true")) {
        fprintf(stderr, "test_mpi_missing: CI=true but CMake found no MPI (install libopenmpi-dev openmpi-bin)\n");
        return 1;
    }
    char buf[4096], args[8192];
    const char *model = test_shared_path("models/stories260K.bin", buf, sizeof buf);
    if (!model)
        test_skip("test_mpi_missing", "../shared/models/stories260K.bin is missing");
    snprintf(args, sizeof args, "run -m '%s' --prompt-ids 1 -n 2 --ids >/dev/null 2>mpi-missing.err", model);
    setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
    setenv("OMPI_COMM_WORLD_RANK", "0", 1);
    int st = tool_run(args);
    FILE *f = fopen("mpi-missing.err", "r");
    char err[4096] = "";
    size_t n = f ? fread(err, 1, sizeof err - 1, f) : 0;
    err[n] = '\0';
    if (f)
        fclose(f);
    CHECK(st == 2 && strstr(err, "built without MPI") && strstr(err, "2 ranks"), "status %d: %s", st, err);
    setenv("OMPI_COMM_WORLD_SIZE", "1", 1);
    st = tool_run(args);
    CHECK(st == 0, "one rank runs as always: status %d", st);
    remove("mpi-missing.err");
    return test_finish("test_mpi_missing");
}
