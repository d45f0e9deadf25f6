/* A libggml-base.so of another ggml release, as far as the version check
 * sees: it exports ggml_version and ggml_commit and nothing else, so a
 * bridge that called anything before checking the version would fail to
 * resolve it (test_ggml_cli's "wrong version" case). */
__attribute__((visibility("default"))) const char *ggml_version(void);
__attribute__((visibility("default"))) const char *ggml_commit(void);

const char *ggml_version(void) {
    return "0.0.1";
}

const char *ggml_commit(void) {
    return "fake";
}
