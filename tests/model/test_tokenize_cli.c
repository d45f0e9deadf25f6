/* `tport tokenize` end to end on the vocabulary-only files of
 * ../shared/models/vocab, against llama.cpp's ids (data/
 * tokenizer_special_refs.json): BOS/EOS as the file says, --parse-special,
 * -f, --json, one-line errors; and `tport run -p` on a Llama-3-vocabulary
 * (tokenizer.ggml.model = gpt2) random model tokenizing the same way. */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../test_util.h"
#include "json_min.h"

#ifndef TPORT_CLI
#error "TPORT_CLI must name the tport executable"
#endif

static int run(const char *cmd, char *out, size_t cap) {
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The case of `text` with parse_special ps in one vocabulary's refs. */
static const json *find_case(const json *v, const char *text, int ps) {
    const json *cases = json_get(v, "cases");
    for (size_t i = 0; cases && i < cases->n; i++) {
        const json *c = &cases->items[i];
        if (!strcmp(json_get(c, "text")->str, text) && (int)json_get(c, "parse_special")->number == ps)
            return c;
    }
    return NULL;
}

/* What add_special gives: BOS?, the ids, EOS?, comma-separated. */
static void want_line(const json *v, const json *c, char *buf, size_t cap) {
    size_t k = 0;
    buf[0] = '\0';
    const json *ids = json_get(c, "ids");
    if (json_get(v, "add_bos")->number)
        k += (size_t)snprintf(buf + k, cap - k, "%d,", (int)json_get(v, "bos")->number);
    for (size_t i = 0; i < ids->n; i++)
        k += (size_t)snprintf(buf + k, cap - k, "%d,", (int)ids->items[i].number);
    if (json_get(v, "add_eos")->number)
        k += (size_t)snprintf(buf + k, cap - k, "%d,", (int)json_get(v, "eos")->number);
    if (k > 0)
        buf[k - 1] = '\n';
    else
        snprintf(buf, cap, "\n");
}

int main(void) {
    char dir[1024], cmd[4096], out[65536], want[65536], path[1200];
    if (!test_shared_path("models/vocab/ggml-vocab-gpt-2.gguf", dir, sizeof dir))
        test_skip("test_tokenize_cli", "../shared/models/vocab absent");
    *strrchr(dir, '/') = '\0';
    json *refs = json_load(TPORT_MODEL_TEST_DATA "/tokenizer_special_refs.json");
    CHECK(refs != NULL, "cannot read tokenizer_special_refs.json");
    const json *vocabs = refs ? json_get(refs, "vocabs") : NULL;

    /* every vocabulary: plain text, BOS/EOS as its metadata says */
    for (size_t i = 0; vocabs && i < vocabs->n; i++) {
        const json *v = &vocabs->items[i];
        const json *c = find_case(v, " Hello  world \n", 0);
        CHECK(c != NULL, "%s: no reference case", vocabs->keys[i]);
        if (!c)
            continue;
        want_line(v, c, want, sizeof want);
        snprintf(path, sizeof path, "%s/ggml-vocab-%s.gguf", dir, vocabs->keys[i]);
        snprintf(cmd, sizeof cmd, "'%s' tokenize -m '%s' -p ' Hello  world \n' 2>/dev/null", TPORT_CLI, path);
        CHECK(run(cmd, out, sizeof out) == 0 && !strcmp(out, want), "%s:\n got  %s want %s", vocabs->keys[i], out,
              want);
    }

    /* special-token text: plain unless --parse-special (Qwen2 chat markup) */
    const json *qwen = vocabs ? json_get(vocabs, "qwen2") : NULL;
    const char *chat = "<|im_start|>user\nhi 12345<|im_end|>\n";
    snprintf(path, sizeof path, "%s/ggml-vocab-qwen2.gguf", dir);
    for (int ps = 0; qwen && ps < 2; ps++) {
        const json *c = find_case(qwen, chat, ps);
        CHECK(c != NULL, "qwen2: no reference case");
        if (!c)
            continue;
        want_line(qwen, c, want, sizeof want);
        snprintf(cmd, sizeof cmd, "'%s' tokenize -m '%s' -p '<|im_start|>user\nhi 12345<|im_end|>\n' %s 2>/dev/null",
                 TPORT_CLI, path, ps ? "--parse-special" : "");
        CHECK(run(cmd, out, sizeof out) == 0 && !strcmp(out, want), "qwen2 parse_special %d:\n got  %s want %s", ps,
              out, want);
    }

    /* -f reads the file's bytes as they are: the same ids as -p */
    char tmp[1100];
    const char *tdir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(tmp, sizeof tmp, "%s/tport_tokenize_cli_%d.txt", tdir, (int)getpid());
    FILE *f = fopen(tmp, "wb");
    CHECK(f != NULL, "cannot write %s", tmp);
    if (f) {
        fputs(chat, f);
        fclose(f);
        snprintf(cmd, sizeof cmd, "'%s' tokenize -m '%s' -f '%s' --parse-special 2>/dev/null", TPORT_CLI, path, tmp);
        char again[65536];
        CHECK(run(cmd, again, sizeof again) == 0 && !strcmp(again, out), "-f differs from -p: %s", again);
        remove(tmp);
    }

    /* --json: the ids and their pieces */
    snprintf(path, sizeof path, "%s/ggml-vocab-llama-bpe.gguf", dir);
    snprintf(cmd, sizeof cmd, "'%s' tokenize -m '%s' -p 'Hello world' --json 2>/dev/null", TPORT_CLI, path);
    CHECK(run(cmd, out, sizeof out) == 0 &&
              !strcmp(out, "{\"ids\": [128000, 9906, 1917], \"pieces\": [\"\", \"Hello\", \" world\"]}\n"),
          "--json: %s", out);

    /* errors: one line, exit status 2 */
    snprintf(cmd, sizeof cmd, "'%s' tokenize -p x 2>&1", TPORT_CLI);
    CHECK(run(cmd, out, sizeof out) == 2 && !strncmp(out, "tport: ", 7) && strchr(out, '\n') == out + strlen(out) - 1,
          "no -m: %s", out);
    snprintf(cmd, sizeof cmd, "'%s' tokenize -m /nonexistent.gguf -p x 2>&1", TPORT_CLI);
    CHECK(run(cmd, out, sizeof out) == 2 && !strncmp(out, "tport: ", 7), "missing file: %s", out);

    /* tport run -p with a BPE vocabulary on a llama model: the prompt gives
     * the same generation as its ids given directly (BOS + Hello + world) */
    char model[1100];
    snprintf(model, sizeof model, "%s/tport_tokenize_cli_%d.gguf", tdir, (int)getpid());
    snprintf(cmd, sizeof cmd, "'%s' synth --dim 32 --layers 1 --heads 2 --ff 64 --ctx 64 --vocab-from '%s' -o '%s' >/dev/null 2>&1",
             TPORT_CLI, path, model);
    CHECK(run(cmd, out, sizeof out) == 0, "synth with the llama-bpe vocabulary failed");
    snprintf(cmd, sizeof cmd, "'%s' run -m '%s' -p 'Hello world' --ids --temp 0 -n 8 2>/dev/null", TPORT_CLI, model);
    CHECK(run(cmd, out, sizeof out) == 0 && out[0] >= '0' && out[0] <= '9', "run -p: %s", out);
    snprintf(cmd, sizeof cmd, "'%s' run -m '%s' --prompt-ids 128000,9906,1917 --ids --temp 0 -n 8 2>/dev/null",
             TPORT_CLI, model);
    CHECK(run(cmd, want, sizeof want) == 0 && !strcmp(out, want), "run -p vs --prompt-ids:\n %s %s", out, want);
    snprintf(cmd, sizeof cmd, "'%s' run -m '%s' --prompt-ids 9906,1917 --ids --temp 0 -n 8 2>/dev/null",
             TPORT_CLI, model);
    CHECK(run(cmd, want, sizeof want) == 0 && strcmp(out, want) != 0, "without BOS the same (test too weak): %s", want);
    /* --parse-special: <|eot_id|> in the prompt is token 128009 */
    snprintf(cmd, sizeof cmd, "'%s' run -m '%s' -p 'Hello world<|eot_id|>' --parse-special --ids --temp 0 -n 8 2>/dev/null",
             TPORT_CLI, model);
    CHECK(run(cmd, out, sizeof out) == 0, "run --parse-special failed");
    snprintf(cmd, sizeof cmd, "'%s' run -m '%s' --prompt-ids 128000,9906,1917,128009 --ids --temp 0 -n 8 2>/dev/null",
             TPORT_CLI, model);
    CHECK(run(cmd, want, sizeof want) == 0 && !strcmp(out, want), "run --parse-special vs ids:\n %s %s", out, want);
    /* streamed text is the ids' pieces */
    snprintf(cmd, sizeof cmd, "'%s' run -m '%s' -p 'Hello world' --temp 0 -n 8 2>/dev/null", TPORT_CLI, model);
    CHECK(run(cmd, want, sizeof want) == 0 && !strncmp(want, "Hello world", 11), "run -p text: %s", want);
    remove(model);
    json_free(refs);
    return test_finish("test_tokenize_cli");
}
