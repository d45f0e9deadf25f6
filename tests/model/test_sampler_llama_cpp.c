/* tport's penalties against llama.cpp's own sampler: the same fixed logits
 * and history go through llama_sampler_init_penalties (the prebuilt
 * libllama of the npm package node-llama-cpp, in the folder named by
 * TPORT_NODE_LLAMA_CPP, dlopen'ed so nothing links against it) and through
 * tport_sampler_apply_penalties, and every logit must be bit-equal: both
 * do the same float operations in the same order.  Skipped when
 * TPORT_NODE_LLAMA_CPP is unset or holds no library for this machine. */
#include <dlfcn.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "../test_util.h"
#include "tport/tport.h"

/* The few declarations of llama.h (llama.cpp of node-llama-cpp 3.21.1)
 * this test calls; the layout is llama.h's. */
typedef struct llama_token_data {
    int32_t id;
    float logit;
    float p;
} llama_token_data;
typedef struct llama_token_data_array {
    llama_token_data *data;
    size_t size;
    int64_t selected;
    bool sorted;
} llama_token_data_array;
struct llama_sampler;

typedef struct llama_api {
    struct llama_sampler *(*init_penalties)(int32_t n_vocab, int32_t last_n, float repeat, float freq, float present);
    void (*accept)(struct llama_sampler *, int32_t);
    void (*apply)(struct llama_sampler *, llama_token_data_array *);
    void (*free_sampler)(struct llama_sampler *);
} llama_api;

#define N_VOCAB 96

typedef struct penalty_case {
    int32_t last_n;
    float repeat, freq, present;
} penalty_case;

static bool load_llama(llama_api *api) {
    const char *root = getenv("TPORT_NODE_LLAMA_CPP");
    struct utsname u;
    if (!root || !*root || uname(&u) != 0)
        return false;
    const char *plat = !strcmp(u.machine, "x86_64") ? "linux-x64" : !strcmp(u.machine, "aarch64") ? "linux-arm64" : NULL;
    if (!plat)
        return false;
    char path[1024];
    snprintf(path, sizeof path, "%s/node_modules/@node-llama-cpp/%s/bins/%s/libllama.v0.4.0.so", root, plat, plat);
    if (access(path, R_OK) != 0)
        return false;
    /* the library is kept loaded to the end: its C++ runtime stays valid */
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    CHECK(h != NULL, "dlopen %s: %s", path, dlerror());
    if (!h)
        return false;
    /* dlsym returns an object pointer; POSIX guarantees function pointers convert */
    *(void **)&api->init_penalties = dlsym(h, "llama_sampler_init_penalties");
    *(void **)&api->accept = dlsym(h, "llama_sampler_accept");
    *(void **)&api->apply = dlsym(h, "llama_sampler_apply");
    *(void **)&api->free_sampler = dlsym(h, "llama_sampler_free");
    CHECK(api->init_penalties && api->accept && api->apply && api->free_sampler, "llama.cpp's sampler symbols");
    return api->init_penalties && api->accept && api->apply && api->free_sampler;
}

/* Runs one case through both samplers; returns how many logits differ. */
static int compare(const llama_api *api, const penalty_case *pc, const float *logits, const int32_t *hist, int n_hist) {
    struct llama_sampler *ls = api->init_penalties(N_VOCAB, pc->last_n, pc->repeat, pc->freq, pc->present);
    tport_sampler_params p = tport_sampler_defaults();
    p.repeat_last_n = pc->last_n;
    p.repeat_penalty = pc->repeat;
    p.frequency_penalty = pc->freq;
    p.presence_penalty = pc->present;
    tport_sampler *ts = tport_sampler_new(&p);
    CHECK(ls && ts, "samplers: %s", tport_last_error());
    if (!ls || !ts)
        return N_VOCAB;
    for (int i = 0; i < n_hist; i++) {
        api->accept(ls, hist[i]);
        tport_sampler_accept(ts, hist[i]);
    }
    llama_token_data data[N_VOCAB];
    float ours[N_VOCAB];
    for (int i = 0; i < N_VOCAB; i++) {
        data[i] = (llama_token_data){i, logits[i], 0.0f};
        ours[i] = logits[i];
    }
    llama_token_data_array arr = {data, N_VOCAB, -1, false};
    api->apply(ls, &arr);
    CHECK(tport_sampler_apply_penalties(ts, ours, N_VOCAB) == TPORT_STATUS_OK, "%s", tport_last_error());
    int diff = 0, changed = 0;
    for (size_t i = 0; i < arr.size; i++) {
        int32_t id = arr.data[i].id;
        CHECK(id >= 0 && id < N_VOCAB, "llama.cpp returned id %d", (int)id);
        if (id < 0 || id >= N_VOCAB)
            continue;
        changed += arr.data[i].logit != logits[id];
        if (memcmp(&arr.data[i].logit, &ours[id], sizeof(float)) != 0) {
            if (diff++ < 4)
                printf("  last_n %d repeat %g freq %g present %g: id %d llama.cpp %.9g tport %.9g\n", (int)pc->last_n,
                       pc->repeat, pc->freq, pc->present, (int)id, arr.data[i].logit, ours[id]);
        }
    }
    CHECK(arr.size == N_VOCAB, "llama.cpp kept %zu of %d candidates", arr.size, N_VOCAB);
    /* a case with penalties on must change something, or it tests nothing */
    bool on = pc->last_n > 0 && !(pc->repeat == 1.0f && pc->freq == 0.0f && pc->present == 0.0f);
    CHECK(on ? changed > 0 : changed == 0, "last_n %d repeat %g freq %g present %g: %d logits changed", (int)pc->last_n,
          pc->repeat, pc->freq, pc->present, changed);
    api->free_sampler(ls);
    tport_sampler_free(ts);
    return diff;
}

int main(void) {
    llama_api api = {0};
    if (!load_llama(&api)) {
        if (test_failures) /* the library is there but unusable: a failure, not a skip */
            return test_finish("test_sampler_llama_cpp");
        test_skip("test_sampler_llama_cpp",
                  "llama.cpp's library not found (set TPORT_NODE_LLAMA_CPP to a node-llama-cpp@3.21.1 install)");
    }
    /* fixed logits: positive, negative, zero, and fractions that round */
    float logits[N_VOCAB];
    uint32_t x = 12345;
    for (int i = 0; i < N_VOCAB; i++) {
        x = x * 1664525u + 1013904223u;
        logits[i] = ((float)(x >> 8) / 16777216.0f - 0.5f) * 23.7f;
    }
    logits[3] = 0.0f;
    logits[4] = -0.0f;
    /* a history with repeats, ids seen once, and ids that fall out of short
     * windows; the first ones play the prompt (llama-server accepts the
     * prompt's tokens into the sampler too) */
    const int32_t hist[] = {1, 3, 4, 7, 7, 7, 12, 95, 40, 12, 7, 0, 55, 55, 2, 90, 91, 3, 12, 7, 33, 33, 33, 33, 60};
    const int n_hist = (int)(sizeof hist / sizeof *hist);
    const penalty_case cases[] = {
        {64, 1.1f, 0.0f, 0.0f},     /* llama-server with --repeat-penalty 1.1 */
        {64, 1.0f, 0.4f, 0.0f},     /* frequency only                         */
        {64, 1.0f, 0.0f, 0.6f},     /* presence only                          */
        {64, 1.3f, 0.37f, 0.71f},   /* all three                              */
        {64, 0.8f, -0.55f, -1.9f},  /* a penalty below 1, negative penalties  */
        {8, 1.25f, 1.7f, 0.33f},    /* a window shorter than the history      */
        {1, 1.5f, 2.0f, 2.0f},      /* only the last token                    */
        {0, 1.5f, 2.0f, 2.0f},      /* last_n 0: off                          */
        {64, 1.0f, 0.0f, 0.0f},     /* all neutral: off                       */
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        int diff = compare(&api, &cases[c], logits, hist, n_hist);
        CHECK(diff == 0, "case %zu: %d logits differ from llama.cpp's", c, diff);
    }
    if (!test_failures)
        printf("llama.cpp's penalties and tport's agree bit for bit in %zu cases\n", sizeof cases / sizeof *cases);
    return test_finish("test_sampler_llama_cpp");
}
