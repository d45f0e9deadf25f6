/* tport tokenize -m FILE [-p TEXT | -f TEXTFILE]: the token ids of a text
 * as llama.cpp's llama_tokenize gives them, from any model file with a
 * vocabulary (vocabulary-only GGUF files too: no weights are read). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "tport/tport.h"

#define MAX_TEXT_BYTES ((size_t)1 << 30)

static void usage(FILE *out) {
    fprintf(out,
            "usage: tport tokenize -m FILE (-p TEXT | -f TEXTFILE) [--parse-special] [--json]\n\n"
            "Prints the token ids of TEXT as one comma-separated line.  BOS/EOS are added\n"
            "where the file's tokenizer.ggml.add_bos_token/add_eos_token (or its tokenizer\n"
            "type's default) say so, as llama.cpp's llama_tokenize(add_special = true).\n"
            "FILE may hold only a vocabulary (llama.cpp's ggml-vocab-*.gguf files).\n\n"
            "  -m, --model FILE    the model or vocabulary file\n"
            "  -p, --prompt TEXT   the text\n"
            "  -f, --file FILE     the text is this file's bytes, as they are\n"
            "  --parse-special     the text of control tokens (<s>, <|im_start|>, ...)\n"
            "                      becomes those tokens; otherwise it is plain text\n"
            "  --no-add-special    add no BOS/EOS\n"
            "  --json              print {\"ids\": [...], \"pieces\": [...]} instead (pieces as\n"
            "                      generation prints them; invalid UTF-8 shown as U+FFFD)\n"
            "  --help              this text\n");
}

static void print_json(const tport_tokenizer *tk, const tport_token *ids, int32_t n) {
    printf("{\"ids\": [");
    for (int32_t i = 0; i < n; i++)
        printf(i ? ", %d" : "%d", (int)ids[i]);
    printf("], \"pieces\": [");
    for (int32_t i = 0; i < n; i++) {
        tport_token prev = i ? ids[i - 1] : -1;
        int32_t m = tport_tokenizer_piece(tk, prev, ids[i], NULL, 0);
        char *piece = malloc((size_t)m + 1);
        if (piece) {
            tport_tokenizer_piece(tk, prev, ids[i], piece, m);
            piece[m] = '\0'; /* a piece with a NUL byte is cut there */
        }
        if (i)
            printf(", ");
        tool_json_string(stdout, piece ? piece : "");
        free(piece);
    }
    printf("]}\n");
}

int cmd_tokenize(int argc, char **argv) {
    const char *model = NULL, *prompt = NULL, *file = NULL;
    bool parse_special = false, add_special = true, json = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "-m") || !strcmp(a, "--model") || !strcmp(a, "-p") || !strcmp(a, "--prompt") ||
                   !strcmp(a, "-f") || !strcmp(a, "--file")) {
            if (i + 1 >= argc)
                return tool_fail(2, "tokenize: %s needs a value", a);
            const char *v = argv[++i];
            if (a[1] == 'm' || !strcmp(a, "--model"))
                model = v;
            else if (a[1] == 'p' || !strcmp(a, "--prompt"))
                prompt = v;
            else
                file = v;
        } else if (!strcmp(a, "--parse-special")) {
            parse_special = true;
        } else if (!strcmp(a, "--no-add-special")) {
            add_special = false;
        } else if (!strcmp(a, "--json")) {
            json = true;
        } else {
            return tool_fail(2, "tokenize: unknown argument '%s' (see tport tokenize --help)", a);
        }
    }
    if (!model)
        return tool_fail(2, "tokenize: no model file (-m FILE)");
    if (!prompt == !file)
        return tool_fail(2, "tokenize: give exactly one of -p TEXT and -f TEXTFILE");
    size_t len = 0;
    char *owned = NULL;
    if (file) {
        owned = tool_read_all(file, MAX_TEXT_BYTES, &len);
        if (!owned)
            return 2;
        prompt = owned;
    } else {
        len = strlen(prompt);
    }
    tport_tokenizer *tk = tport_tokenizer_load(model);
    if (!tk) {
        free(owned);
        return tool_fail(2, "%s", tport_last_error());
    }
    int rc = 0;
    int32_t n = tport_tokenizer_tokenize(tk, prompt, len, add_special, parse_special, NULL, 0);
    tport_token *ids = n >= 0 ? malloc((size_t)(n > 0 ? n : 1) * sizeof *ids) : NULL;
    if (n < 0 || !ids) {
        rc = tool_fail(2, "tokenize: %s", n < 0 ? tport_last_error() : "out of memory");
    } else {
        tport_tokenizer_tokenize(tk, prompt, len, add_special, parse_special, ids, n);
        if (json) {
            print_json(tk, ids, n);
        } else {
            for (int32_t i = 0; i < n; i++)
                printf(i ? ",%d" : "%d", (int)ids[i]);
            printf("\n");
        }
    }
    free(ids);
    tport_tokenizer_free(tk);
    free(owned);
    return rc;
}
