/* The layer split of --split and the option parsing of src/dist, without
 * MPI: proportions, rounding, and the one-line refusals. */
#include <string.h>

#include "../test_util.h"
#include "dist/dist_internal.h"
#include "tport/tport.h"

static int split(const char *s, int ranks, int32_t layers, int32_t *b) {
    return dist_split_layers(s, ranks, layers, b) == TPORT_STATUS_OK;
}

int main(void) {
    int32_t b[8];
    CHECK(split(NULL, 2, 5, b) && b[0] == 0 && b[1] == 3 && b[2] == 5, "even split of 5 over 2: %d", b[1]);
    CHECK(split(NULL, 3, 12, b) && b[1] == 4 && b[2] == 8 && b[3] == 12, "even split of 12 over 3");
    CHECK(split("1,3", 2, 12, b) && b[1] == 3, "1:3 of 12 gives rank 0 three layers: %d", b[1]);
    CHECK(split("0.5,0.25,0.25", 3, 8, b) && b[1] == 4 && b[2] == 6, "fractions: %d %d", b[1], b[2]);
    CHECK(split("4,1", 2, 5, b) && b[1] == 4, "4:1 of 5");

    const char *bad[] = {"1", "1,2,3", "1,,2", "a,b", "1,-1", "0,1", "1,2,", "inf,1", "nan,1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(!split(bad[i], 2, 5, b) && strstr(tport_last_error(), "--split") &&
                  !strchr(tport_last_error(), '\n'),
              "'%s' is refused in one line: %s", bad[i], tport_last_error());
    CHECK(!split("100,1", 2, 5, b) && strstr(tport_last_error(), "rank 1 without a layer"),
          "a rank without a layer: %s", tport_last_error());
    CHECK(!split(NULL, 6, 5, b) && strstr(tport_last_error(), "6 ranks but the model has 5 layers"),
          "more ranks than layers: %s", tport_last_error());

    /* the options come out of argv; the command's own stay in order */
    char *argv[] = {"run", "-m", "x", "--split", "1,2", "--plan", "--model-rank", "1=/y", "-n", "4",
                    "--micro-batch", "8", "--rank-timeout", "2.5", NULL};
    int argc = 14;
    dist_opts o;
    /* run keeps --plan: its own (rank 0's backends after the run) */
    CHECK(dist_take_options("run", &argc, argv, 2, true, &o) == 0 && argc == 6 && !strcmp(argv[3], "--plan") &&
              !strcmp(argv[4], "-n") && !argv[6] && o.plan && !strcmp(o.split, "1,2") && o.model_rank[1] && !strcmp(o.model_rank[1], "/y") &&
              o.micro_batch == 8 && o.timeout_s == 2.5,
          "options taken: argc %d", argc);
    char *wrong[] = {"run", "--model-rank", "2=/z", NULL};
    argc = 3;
    CHECK(dist_take_options("run", &argc, wrong, 2, true, &o) == 2, "--model-rank of a rank that is not there");
    char *alone[] = {"run", "--split", "1,1", NULL};
    argc = 3;
    CHECK(dist_take_options("run", &argc, alone, 1, true, &o) == 2, "--split without mpirun is an error");
    return test_finish("test_dist_split");
}
