/* GBNF grammars (src/grammar): parse errors name what is wrong, and a
 * generation constrained by tport_grammar_apply / accept over real
 * vocabularies (SentencePiece with byte tokens, byte-level BPE) from
 * random logits always produces text of the grammar's language, checked
 * here by hand-written recognizers; logit_bias moves the sampler. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../test_util.h"
#include "tport/tport.h"

static bool parses(const char *g) {
    tport_grammar *gr = tport_grammar_parse(g, strlen(g), NULL);
    tport_grammar_free(gr);
    return gr != NULL;
}

static void check_error(const char *g, const char *want) {
    tport_grammar *gr = tport_grammar_parse(g, strlen(g), NULL);
    CHECK(!gr && strstr(tport_last_error(), want), "'%s' -> '%s', want an error with '%s'", g,
          gr ? "(parsed)" : tport_last_error(), want);
    tport_grammar_free(gr);
}

static void test_parse(void) {
    CHECK(parses("root ::= \"a\""), "%s", tport_last_error());
    CHECK(parses("root ::= x y\nx ::= [a-z]+ # comment\ny ::= (\"-\" | \"_\")? [0-9]{1,3}"), "%s",
          tport_last_error());
    CHECK(parses("root ::= \"\\u00e9\\x41\\n\" [^\"\\\\] . \"\\U0001F600\""), "%s", tport_last_error());
    CHECK(parses("root   ::=   (\n  \"a\"\n | \"b\"\n)*\n"), "%s", tport_last_error());
    check_error("root ::= x", "rule 'x' is used but not defined");
    check_error("x ::= \"a\"", "there is no rule 'root'");
    check_error("root ::= root \"a\" | \"b\"", "left-recursive");
    check_error("root ::= x\nx ::= \"\"? root", "left-recursive");
    check_error("root ::= \"abc", "unterminated string");
    check_error("root ::= [a-", "unterminated character set");
    check_error("root ::= [z-a]", "end is before its start");
    check_error("root ::= \"a\"{2000}", "above 1000");
    check_error("root ::= \"a\"{3,2}", "n < m");
    check_error("root ::= \"\\q\"", "unknown escape");
    check_error("root ::= \"a\"\nroot ::= \"b\"", "defined twice");
    check_error("root ::= (((\"a\")", "expected ')'");
    check_error("root ::= \"a\" @", "unexpected character");
    check_error("::= \"a\"", "expected a rule");
    char deep[1024] = "root ::= ";
    for (int i = 0; i < 300; i++)
        strcat(deep, "(");
    check_error(deep, "nested too deep");
}

/* The recognizers of the test grammars' languages. */
static bool is_yes_no(const char *s) { return !strcmp(s, "yes") || !strcmp(s, "no"); }

static bool is_code(const char *s) { /* [0-9]{2,4} "-" [a-z]+ */
    int d = 0;
    while (s[d] >= '0' && s[d] <= '9')
        d++;
    if (d < 2 || d > 4 || s[d] != '-')
        return false;
    s += d + 1;
    if (!*s)
        return false;
    for (; *s; s++)
        if (*s < 'a' || *s > 'z')
            return false;
    return true;
}

static bool is_unicode(const char *s) { /* "é" [日本]+ "!" */
    if (strncmp(s, "\xc3\xa9", 2))
        return false;
    s += 2;
    int n = 0;
    while (!strncmp(s, "\xe6\x97\xa5", 3) || !strncmp(s, "\xe6\x9c\xac", 3))
        s += 3, n++;
    return n >= 1 && !strcmp(s, "!");
}

static const char *skip_ws(const char *s) {
    while (*s == ' ')
        s++;
    return s;
}

/* {"a": <int>, "b": [<bool>, ...]} with optional spaces */
static bool is_object(const char *s) {
    s = skip_ws(s);
    if (strncmp(s, "{\"a\":", 5))
        return false;
    s = skip_ws(s + 5);
    if (*s == '-')
        s++;
    if (!(*s >= '0' && *s <= '9'))
        return false;
    if (*s == '0' && s[1] >= '0' && s[1] <= '9')
        return false;
    while (*s >= '0' && *s <= '9')
        s++;
    s = skip_ws(s);
    if (strncmp(s, ",", 1))
        return false;
    s = skip_ws(s + 1);
    if (strncmp(s, "\"b\":", 4))
        return false;
    s = skip_ws(s + 4);
    if (*s++ != '[')
        return false;
    s = skip_ws(s);
    if (*s != ']') {
        for (;;) {
            if (!strncmp(s, "true", 4))
                s += 4;
            else if (!strncmp(s, "false", 5))
                s += 5;
            else
                return false;
            s = skip_ws(s);
            if (*s != ',')
                break;
            s = skip_ws(s + 1);
        }
    }
    if (*s++ != ']')
        return false;
    s = skip_ws(s);
    return *s++ == '}' && !*skip_ws(s);
}

typedef struct gcase {
    const char *name, *gbnf;
    bool (*ok)(const char *);
} gcase;

static const gcase cases[] = {
    {"yes/no", "root ::= \"yes\" | \"no\"", is_yes_no},
    {"code", "root ::= [0-9]{2,4} \"-\" [a-z]+", is_code},
    {"unicode", "root ::= \"\\u00e9\" [\\u65e5\\u672c]+ \"!\"", is_unicode},
    {"object", "root ::= ws \"{\\\"a\\\":\" ws int ws \",\" ws \"\\\"b\\\":\" ws \"[\" ws (bool (ws \",\" ws bool)*)? ws \"]\" ws \"}\" ws\n"
               "int ::= \"-\"? ([0-9] | [1-9] [0-9]{1,8})\nbool ::= \"true\" | \"false\"\nws ::= \" \"{0,2}",
     is_object},
};

/* Generates from random logits under the grammar; the text must be in the
 * language.  `eos` ends the text when the grammar allows it. */
static void generate(const tport_tokenizer *tk, const char *vocab, const gcase *c, unsigned long long seed) {
    tport_grammar *g = tport_grammar_parse(c->gbnf, strlen(c->gbnf), NULL);
    CHECK(g, "%s: %s", c->name, tport_last_error());
    if (!g)
        return;
    tport_grammar_state *st = tport_grammar_state_new(g, tk);
    CHECK(st, "%s: %s", c->name, tport_last_error());
    int32_t nv = tport_tokenizer_n_tokens(tk);
    float *logits = malloc((size_t)nv * sizeof *logits);
    char text[4096] = "";
    size_t len = 0;
    tport_token eos = 2; /* any id outside the grammar stands for the end */
    bool ended = false;
    for (int step = 0; st && step < 200 && !ended; step++) {
        for (int32_t i = 0; i < nv; i++)
            logits[i] = 4 * test_rng_uniform(&seed);
        logits[eos] += 1; /* ends where allowed, now and then */
        tport_status s = tport_grammar_apply(st, logits, nv, &eos, 1);
        CHECK(s == TPORT_STATUS_OK, "%s/%s step %d: %s", vocab, c->name, step, tport_last_error());
        if (s)
            break;
        int32_t best = 0;
        for (int32_t i = 1; i < nv; i++)
            if (logits[i] > logits[best])
                best = i;
        if (best == eos) {
            ended = true;
            break;
        }
        CHECK(tport_grammar_allows(st, best), "%s: the argmax of the masked logits is refused", c->name);
        CHECK(tport_grammar_accept(st, best) == TPORT_STATUS_OK, "%s: %s", c->name, tport_last_error());
        char piece[256];
        int32_t n = tport_tokenizer_piece(tk, 1 << 30, best, piece, (int32_t)sizeof piece);
        if (n > 0 && len + (size_t)n < sizeof text) {
            memcpy(text + len, piece, (size_t)n);
            len += (size_t)n;
            text[len] = 0;
        }
        if (tport_grammar_must_end(st))
            ended = true;
    }
    CHECK(ended && c->ok(text), "%s/%s seed %llu: '%s' is not in the language (ended %d)", vocab, c->name, seed,
          text, ended);
    free(logits);
    tport_grammar_state_free(st);
    tport_grammar_free(g);
}

static void test_logit_bias(void) {
    float logits[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    tport_sampler_params p = tport_sampler_defaults();
    p.temperature = 0;
    tport_sampler *sm = tport_sampler_new(&p);
    CHECK(tport_sampler_sample(sm, logits, 8) == 7, "greedy without bias");
    tport_logit_bias b[2] = {{7, -INFINITY}, {2, 5.5f}};
    CHECK(tport_sampler_set_logit_bias(sm, b, 2) == TPORT_STATUS_OK, "%s", tport_last_error());
    CHECK(tport_sampler_sample(sm, logits, 8) == 2, "3 + 5.5 beats 7 (8 is banned)");
    CHECK(logits[7] == 8 && logits[2] == 3, "the caller's logits are untouched");
    tport_logit_bias bad = {1, NAN};
    CHECK(tport_sampler_set_logit_bias(sm, &bad, 1) != TPORT_STATUS_OK, "NaN bias refused");
    CHECK(tport_sampler_set_logit_bias(sm, NULL, 0) == TPORT_STATUS_OK, "clear");
    CHECK(tport_sampler_sample(sm, logits, 8) == 7, "cleared");
    tport_sampler_free(sm);
}

int main(void) {
    test_parse();
    test_logit_bias();
    static const char *const vocabs[] = {"models/vocab/ggml-vocab-llama-spm.gguf", "models/vocab/ggml-vocab-llama-bpe.gguf"};
    int found = 0;
    for (size_t v = 0; v < sizeof vocabs / sizeof *vocabs; v++) {
        char path[1024];
        if (!test_shared_path(vocabs[v], path, sizeof path))
            continue;
        tport_tokenizer *tk = tport_tokenizer_load(path);
        CHECK(tk, "%s: %s", path, tport_last_error());
        if (!tk)
            continue;
        found++;
        for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
            for (unsigned long long seed = 1; seed <= 6; seed++)
                generate(tk, vocabs[v], &cases[c], seed * 7919);
        tport_tokenizer_free(tk);
    }
    if (!found)
        printf("test_grammar: generation part skipped (../shared/models/vocab absent)\n");
    return test_finish("test_grammar");
}
