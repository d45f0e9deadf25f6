/* Private to src/grammar: a GBNF grammar compiled to flat sequences of
 * elements, the form the matcher walks (grammar_match.c).
 *
 * Every rule is a list of alternatives; an alternative is a run of
 * elements in `elems` ended by GE_END.  Repetitions and groups were
 * expanded at parse time into helper rules (X* is R ::= X R | empty), so
 * the matcher knows only character sets and rule references. */
#ifndef TPORT_GRAMMAR_GRAMMAR_H
#define TPORT_GRAMMAR_GRAMMAR_H

#include <stdbool.h>
#include <stdint.h>

#include "tport/tport.h"

enum { GE_END = 0, GE_CHARS = 1, GE_REF = 2 };

typedef struct gram_elem {
    int32_t kind;   /* GE_*                                            */
    int32_t arg;    /* GE_CHARS: set index; GE_REF: rule index         */
} gram_elem;

typedef struct gram_set {
    int32_t first, n; /* ranges[first .. first + n), (lo, hi) pairs     */
    bool negated;
} gram_set;

typedef struct gram_rule {
    char *name;
    int32_t *alts;  /* start index in elems of each alternative        */
    int32_t n_alts;
    bool defined, nullable;
} gram_rule;

struct tport_grammar {
    gram_elem *elems;
    int32_t n_elems, cap_elems;
    uint32_t *ranges;
    int32_t n_ranges, cap_ranges;
    gram_set *sets;
    int32_t n_sets, cap_sets;
    gram_rule *rules;
    int32_t n_rules, cap_rules;
    int32_t root;
};

/* Limits on what a grammar text may expand to: it comes from requests. */
#define GRAM_MAX_ELEMS (1 << 20)
#define GRAM_MAX_RULES (1 << 16)
#define GRAM_MAX_REPEAT 1000   /* the largest count in X{m,n}              */
#define GRAM_MAX_NESTING 200   /* parentheses                              */

bool gram_set_has(const struct tport_grammar *g, int32_t set, uint32_t c);
/* Whether the set holds any code point in [lo, hi]. */
bool gram_set_meets(const struct tport_grammar *g, int32_t set, uint32_t lo, uint32_t hi);

#endif
