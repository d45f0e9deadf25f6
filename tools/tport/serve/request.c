/* Parsing and checking request bodies with cJSON.  Every length and count
 * is bounded here; unknown fields are ignored, as llama-server does, since
 * clients send vendor extensions.  Known fields the server does not
 * implement are accepted only with their default values
 * (refuse_unsupported). */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "json_schema.h"
#include "request.h"

#define MAX_IDS (1 << 20)
#define MAX_BIAS 4096

/* cJSON records the position of a parse error in a global: parse under a
 * lock so two connection threads never write it at once. */
static pthread_mutex_t parse_lock = PTHREAD_MUTEX_INITIALIZER;

static bool fail(serve_error *err, const char *param, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static bool fail(serve_error *err, const char *param, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    err->param = param;
    return false;
}

/* An optional field: NULL when absent or JSON null (OpenAI treats null as
 * "use the default"). */
static const cJSON *field(const cJSON *obj, const char *name) {
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(obj, name);
    return f && !cJSON_IsNull(f) ? f : NULL;
}

static bool get_number(const cJSON *obj, const char *name, double lo, double hi, bool *have, double *out,
                       serve_error *err) {
    const cJSON *f = field(obj, name);
    if (!f)
        return true;
    if (!cJSON_IsNumber(f))
        return fail(err, name, "'%s' must be a number", name);
    if (!(f->valuedouble >= lo && f->valuedouble <= hi))
        return fail(err, name, "'%s' must be in [%g, %g], not %g", name, lo, hi, f->valuedouble);
    *have = true;
    *out = f->valuedouble;
    return true;
}

static bool is_integer(const cJSON *f, double lo, double hi) {
    return cJSON_IsNumber(f) && isfinite(f->valuedouble) && floor(f->valuedouble) == f->valuedouble &&
           f->valuedouble >= lo && f->valuedouble <= hi;
}

static bool get_int(const cJSON *obj, const char *name, double lo, double hi, bool *have, int64_t *out,
                    serve_error *err) {
    const cJSON *f = field(obj, name);
    if (!f)
        return true;
    if (!cJSON_IsNumber(f))
        return fail(err, name, "'%s' must be an integer", name);
    if (!is_integer(f, lo, hi))
        return fail(err, name, "'%s' must be an integer in [%.0f, %.0f], not %g", name, lo, hi, f->valuedouble);
    *have = true;
    *out = (int64_t)f->valuedouble;
    return true;
}

static bool get_bool(const cJSON *obj, const char *name, bool *out, serve_error *err) {
    const cJSON *f = field(obj, name);
    if (!f)
        return true;
    if (!cJSON_IsBool(f))
        return fail(err, name, "'%s' must be a boolean", name);
    *out = cJSON_IsTrue(f);
    return true;
}

/* An array of token ids, each in [0, INT32_MAX]; the vocabulary check comes
 * later, with the model. */
static bool get_ids(const cJSON *arr, const char *name, int32_t **ids, int32_t *n, serve_error *err) {
    int count = cJSON_GetArraySize(arr);
    if (count > MAX_IDS)
        return fail(err, name, "'%s' has more than %d tokens", name, MAX_IDS);
    *ids = malloc((size_t)(count ? count : 1) * sizeof **ids);
    if (!*ids)
        return fail(err, name, "out of memory");
    *n = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, arr) {
        if (!is_integer(e, 0, 2147483647.0))
            return fail(err, name, "'%s' must hold token ids (non-negative integers)", name);
        (*ids)[(*n)++] = (int32_t)e->valuedouble;
    }
    return true;
}

static bool parse_stop(const cJSON *obj, serve_request *r, serve_error *err) {
    const cJSON *f = field(obj, "stop");
    if (!f)
        return true;
    if (cJSON_IsString(f)) {
        if (strlen(f->valuestring) > SERVE_MAX_STOP_LEN)
            return fail(err, "stop", "'stop' strings are limited to %d bytes", SERVE_MAX_STOP_LEN);
        if (f->valuestring[0] && !(r->stop[r->n_stop++] = strdup(f->valuestring)))
            return fail(err, "stop", "out of memory");
        return true;
    }
    if (!cJSON_IsArray(f))
        return fail(err, "stop", "'stop' must be a string or an array of strings");
    if (cJSON_GetArraySize(f) > SERVE_MAX_STOP)
        return fail(err, "stop", "'stop' holds at most %d strings", SERVE_MAX_STOP);
    const cJSON *e;
    cJSON_ArrayForEach(e, f) {
        if (!cJSON_IsString(e))
            return fail(err, "stop", "'stop' must be a string or an array of strings");
        if (strlen(e->valuestring) > SERVE_MAX_STOP_LEN)
            return fail(err, "stop", "'stop' strings are limited to %d bytes", SERVE_MAX_STOP_LEN);
        if (e->valuestring[0] && !(r->stop[r->n_stop++] = strdup(e->valuestring)))
            return fail(err, "stop", "out of memory");
    }
    return true;
}

static bool parse_sampling(const cJSON *obj, int64_t max_tokens_cap, serve_request *r, serve_error *err) {
    bool have = false;
    double d = 0;
    int64_t i = 0;
    /* max_completion_tokens is the newer OpenAI name; either may come */
    const char *mt_name = field(obj, "max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
    if (!get_int(obj, mt_name, -1e18, 1e18, &have, &i, err))
        return false;
    if (have && (i < 1 || i > max_tokens_cap))
        return fail(err, mt_name, "'%s' must be in [1, %lld] (the context length), not %lld", mt_name,
                    (long long)max_tokens_cap, (long long)i);
    r->max_tokens = have ? i : -1;
    if (!get_number(obj, "temperature", 0, 2, &r->have_temperature, &d, err))
        return false;
    r->temperature = (float)d;
    if (!get_number(obj, "top_p", 0, 1, &r->have_top_p, &d, err))
        return false;
    if (r->have_top_p && d == 0)
        d = 1e-9; /* 0 means "only the top token", which the sampler takes as a tiny nucleus */
    r->top_p = (float)d;
    if (!get_number(obj, "min_p", 0, 1, &r->have_min_p, &d, err))
        return false;
    r->min_p = (float)d;
    have = false;
    if (!get_int(obj, "top_k", 0, 1e9, &r->have_top_k, &i, err))
        return false;
    r->top_k = (int32_t)i;
    if (!get_int(obj, "seed", -9007199254740992.0, 9007199254740992.0, &r->have_seed, &i, err))
        return false;
    if (r->have_seed && i < 0)
        r->have_seed = false; /* llama-server takes -1 as "random" */
    r->seed = (uint64_t)i;
    /* OpenAI's penalties in OpenAI's range; llama-server's repetition
     * penalty and window (-1 = the whole context, as llama-server took it) */
    if (!get_number(obj, "presence_penalty", -2, 2, &r->have_presence, &d, err))
        return false;
    r->presence_penalty = (float)d;
    if (!get_number(obj, "frequency_penalty", -2, 2, &r->have_frequency, &d, err))
        return false;
    r->frequency_penalty = (float)d;
    d = 1;
    if (!get_number(obj, "repeat_penalty", 0, 100, &r->have_repeat_penalty, &d, err))
        return false;
    if (!(d > 0))
        return fail(err, "repeat_penalty", "'repeat_penalty' must be above 0 (1 = off)");
    r->repeat_penalty = (float)d;
    i = 0;
    if (!get_int(obj, "repeat_last_n", -1, 1 << 20, &r->have_repeat_last_n, &i, err))
        return false;
    r->repeat_last_n = (int32_t)(i >= 0 ? i : max_tokens_cap < (1 << 20) ? max_tokens_cap : 1 << 20);
    if (!get_bool(obj, "stream", &r->stream, err) || !get_bool(obj, "ignore_eos", &r->ignore_eos, err) ||
        !parse_stop(obj, r, err))
        return false;
    const cJSON *so = field(obj, "stream_options");
    if (so && !cJSON_IsObject(so))
        return fail(err, "stream_options", "'stream_options' must be an object");
    bool obfuscation = false; /* padding in stream events: no effect on the text */
    return !so || (get_bool(so, "include_usage", &r->include_usage, err) &&
                   get_bool(so, "include_obfuscation", &obfuscation, err));
}

/* What a field must hold to be accepted while the server does not
 * implement it: its default.  A value that asks for more (JSON output,
 * tools, log-probabilities, several choices, a bias) would otherwise be
 * answered as if it had not been asked, e.g. prose where JSON was asked
 * for.  Clients send the defaults (LangChain: n 1, logit_bias {}), so
 * those pass. */
typedef enum default_kind {
    DEF_NUMBER,     /* the number `num`                                  */
    DEF_FALSE,      /* false                                             */
    DEF_STRING,     /* the string `str` (or `alt`)                       */
    DEF_EMPTY,      /* an empty object or array                          */
    DEF_TEXT_FORMAT,/* {"type": "text"}                                  */
    DEF_TEXT_ONLY,  /* an array of "text" strings (modalities)           */
    DEF_NONE,       /* only absent or null                               */
} default_kind;

typedef struct unsupported_field {
    const char *name;
    default_kind kind;
    double num;
    const char *str, *alt;
    const char *what;   /* what the server cannot do yet, for the message */
} unsupported_field;

static const unsupported_field unsupported_fields[] = {
    {"best_of", DEF_NUMBER, 1, NULL, NULL, "best-of sampling"},
    {"n_probs", DEF_NUMBER, 0, NULL, NULL, "token probabilities"},
    {"functions", DEF_EMPTY, 0, NULL, NULL, "function calls"},
    {"function_call", DEF_STRING, 0, "none", "auto", "function calls (only \"none\" or \"auto\")"},
    {"echo", DEF_FALSE, 0, NULL, NULL, "echoing the prompt"},
    {"suffix", DEF_STRING, 0, "", NULL, "a suffix (fill in the middle)"},
    {"audio", DEF_NONE, 0, NULL, NULL, "audio output"},
    {"modalities", DEF_TEXT_ONLY, 0, NULL, NULL, "output other than text"},
    {"web_search_options", DEF_NONE, 0, NULL, NULL, "web search"},
    {"reasoning_effort", DEF_NONE, 0, NULL, NULL, "reasoning effort"},
    {"verbosity", DEF_STRING, 0, "medium", NULL, "verbosity (only \"medium\")"},
    /* llama-server's samplers beyond the ones implemented */
    {"n_predict", DEF_NUMBER, -1, NULL, NULL, "n_predict (use max_tokens)"},
    {"mirostat", DEF_NUMBER, 0, NULL, NULL, "mirostat sampling"},
    {"typical_p", DEF_NUMBER, 1, NULL, NULL, "typical sampling"},
    {"dynatemp_range", DEF_NUMBER, 0, NULL, NULL, "dynamic temperature"},
    {"xtc_probability", DEF_NUMBER, 0, NULL, NULL, "XTC sampling"},
    {"dry_multiplier", DEF_NUMBER, 0, NULL, NULL, "DRY sampling"},
    {"top_n_sigma", DEF_NUMBER, -1, NULL, NULL, "top-n-sigma sampling"},
};

static bool holds_default(const cJSON *f, const unsupported_field *u) {
    const cJSON *e;
    switch (u->kind) {
    case DEF_NUMBER:
        return cJSON_IsNumber(f) && f->valuedouble == u->num;
    case DEF_FALSE:
        return cJSON_IsFalse(f);
    case DEF_STRING:
        return cJSON_IsString(f) && (!strcmp(f->valuestring, u->str) || (u->alt && !strcmp(f->valuestring, u->alt)));
    case DEF_EMPTY:
        return (cJSON_IsObject(f) || cJSON_IsArray(f)) && !f->child;
    case DEF_TEXT_FORMAT:
        e = cJSON_GetObjectItemCaseSensitive(f, "type");
        return cJSON_IsObject(f) && cJSON_IsString(e) && !strcmp(e->valuestring, "text");
    case DEF_TEXT_ONLY:
        if (!cJSON_IsArray(f))
            return false;
        cJSON_ArrayForEach(e, f) {
            if (!cJSON_IsString(e) || strcmp(e->valuestring, "text"))
                return false;
        }
        return true;
    case DEF_NONE:
        return false;
    }
    return false;
}

/* n, logprobs / top_logprobs, logit_bias. */
static bool parse_choices(serve_kind kind, const cJSON *obj, serve_request *r, serve_error *err) {
    bool have = false;
    int64_t i = 1;
    if (!get_int(obj, "n", 1, SERVE_MAX_CHOICES, &have, &i, err))
        return false;
    r->n_choices = (int)i;
    const cJSON *lp = field(obj, "logprobs");
    if (kind == SERVE_REQ_COMPLETION) { /* an integer: how many alternatives (false/true: 0) */
        if (lp && cJSON_IsBool(lp)) {
            r->logprobs = cJSON_IsTrue(lp);
        } else if (lp) {
            i = 0;
            if (!get_int(obj, "logprobs", 0, SERVE_MAX_TOP_LOGPROBS, &have, &i, err))
                return false;
            r->logprobs = true;
            r->top_logprobs = (int)i;
        }
        i = 0; /* a chat field: checked, no effect here */
        if (!get_int(obj, "top_logprobs", 0, SERVE_MAX_TOP_LOGPROBS, &have, &i, err))
            return false;
    } else {
        if (!get_bool(obj, "logprobs", &r->logprobs, err))
            return false;
        i = 0;
        have = false;
        if (!get_int(obj, "top_logprobs", 0, SERVE_MAX_TOP_LOGPROBS, &have, &i, err))
            return false;
        if (have && i > 0 && !r->logprobs)
            return fail(err, "top_logprobs", "'top_logprobs' needs 'logprobs': true");
        r->top_logprobs = (int)i;
    }
    const cJSON *lb = field(obj, "logit_bias");
    if (!lb)
        return true;
    if (!cJSON_IsObject(lb) && !cJSON_IsArray(lb))
        return fail(err, "logit_bias", "'logit_bias' must be an object of token id -> bias");
    int n = cJSON_GetArraySize(lb);
    if (n > MAX_BIAS)
        return fail(err, "logit_bias", "'logit_bias' holds at most %d entries", MAX_BIAS);
    r->bias_ids = malloc((size_t)(n ? n : 1) * sizeof *r->bias_ids);
    r->bias_vals = malloc((size_t)(n ? n : 1) * sizeof *r->bias_vals);
    if (!r->bias_ids || !r->bias_vals)
        return fail(err, "logit_bias", "out of memory");
    const cJSON *e;
    cJSON_ArrayForEach(e, lb) {
        const cJSON *v = e;
        double id;
        if (cJSON_IsObject(lb)) { /* OpenAI: {"15043": -100} */
            char *end = NULL;
            id = strtod(e->string, &end);
            if (!e->string[0] || *end || id < 0 || id > 2147483647.0 || id != floor(id))
                return fail(err, "logit_bias", "'logit_bias' keys must be token ids, not '%.40s'", e->string);
        } else { /* llama-server: [[15043, -100], [2, false]] */
            if (!cJSON_IsArray(e) || cJSON_GetArraySize(e) != 2 || !is_integer(e->child, 0, 2147483647.0))
                return fail(err, "logit_bias", "'logit_bias' as an array holds [token id, bias] pairs");
            id = e->child->valuedouble;
            v = e->child->next;
        }
        float bias;
        if (cJSON_IsFalse(v))
            bias = -INFINITY; /* llama-server: never this token */
        else if (cJSON_IsNumber(v) && v->valuedouble >= -100 && v->valuedouble <= 100)
            bias = (float)v->valuedouble;
        else
            return fail(err, "logit_bias", "'logit_bias' values must be numbers in [-100, 100]");
        r->bias_ids[r->n_bias] = (int32_t)id;
        r->bias_vals[r->n_bias++] = bias;
    }
    return true;
}

static bool set_grammar(serve_request *r, const char *param, char *g, serve_error *err) {
    if (!g)
        return false; /* err filled by the converter */
    if (r->grammar) {
        free(g);
        return fail(err, param, "'%s' and '%s' cannot both constrain the output", r->grammar_param, param);
    }
    r->grammar = g;
    r->grammar_param = param;
    return true;
}

static bool from_schema(serve_request *r, const char *param, const cJSON *schema, serve_error *err) {
    char *g = json_schema_to_gbnf(schema, err);
    if (!g) { /* name the field as well as the keyword */
        char why[sizeof err->message];
        snprintf(why, sizeof why, "%s", err->message);
        fail(err, param, "'%s': %.220s", param, why);
    }
    return set_grammar(r, param, g, err);
}

/* response_format, llama-server's json_schema and grammar fields. */
static bool parse_format(const cJSON *obj, serve_request *r, serve_error *err) {
    const cJSON *rf = field(obj, "response_format"), *js = field(obj, "json_schema"), *gr = field(obj, "grammar");
    if (gr) {
        if (!cJSON_IsString(gr))
            return fail(err, "grammar", "'grammar' must be a string (GBNF)");
        if (gr->valuestring[0] && !set_grammar(r, "grammar", strdup(gr->valuestring), err))
            return err->message[0] ? false : fail(err, "grammar", "out of memory");
    }
    if (js && !from_schema(r, "json_schema", js, err))
        return false;
    if (!rf)
        return true;
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(rf, "type");
    if (!cJSON_IsObject(rf) || !cJSON_IsString(type))
        return fail(err, "response_format", "'response_format' must be an object with a string 'type'");
    const char *t = type->valuestring;
    if (!strcmp(t, "text"))
        return true;
    if (!strcmp(t, "json_object")) /* llama-server: an optional "schema" beside */
        return from_schema(r, "response_format", cJSON_GetObjectItemCaseSensitive(rf, "schema"), err);
    if (!strcmp(t, "json_schema")) {
        const cJSON *j = cJSON_GetObjectItemCaseSensitive(rf, "json_schema");
        if (!cJSON_IsObject(j))
            return fail(err, "response_format", "'response_format' of type json_schema needs a 'json_schema' object");
        const cJSON *schema = cJSON_GetObjectItemCaseSensitive(j, "schema");
        if (schema && !cJSON_IsObject(schema) && !cJSON_IsTrue(schema))
            return fail(err, "response_format", "'json_schema.schema' must be an object");
        return from_schema(r, "response_format", schema, err);
    }
    return fail(err, "response_format", "'response_format' type '%.40s' is not supported (text, json_object, "
                "json_schema)", t);
}

static bool refuse_unsupported(const cJSON *obj, serve_error *err) {
    for (size_t i = 0; i < sizeof unsupported_fields / sizeof *unsupported_fields; i++) {
        const unsupported_field *u = &unsupported_fields[i];
        const cJSON *f = field(obj, u->name);
        if (f && !holds_default(f, u))
            return fail(err, u->name, "'%s' is not supported: tport serve does not implement %s yet", u->name,
                        u->what);
    }
    /* accepted and without effect on the text: checked for their type only */
    static const char *const strings[] = {"model", "user", "service_tier", "prompt_cache_key", "safety_identifier"};
    for (size_t i = 0; i < sizeof strings / sizeof *strings; i++) {
        const cJSON *f = field(obj, strings[i]);
        if (f && !cJSON_IsString(f))
            return fail(err, strings[i], "'%s' must be a string", strings[i]);
    }
    bool b = false;
    const cJSON *meta = field(obj, "metadata");
    if (meta && !cJSON_IsObject(meta))
        return fail(err, "metadata", "'metadata' must be an object");
    return get_bool(obj, "store", &b, err) && get_bool(obj, "parallel_tool_calls", &b, err);
}

static bool parse_prompt(const cJSON *obj, serve_request *r, serve_error *err) {
    const cJSON *p = field(obj, "prompt");
    if (!p)
        return fail(err, "prompt", "'prompt' is required");
    if (cJSON_IsString(p)) {
        r->prompt = strdup(p->valuestring);
        return r->prompt ? true : fail(err, "prompt", "out of memory");
    }
    if (!cJSON_IsArray(p))
        return fail(err, "prompt", "'prompt' must be a string, an array of one string, or an array of token ids");
    const cJSON *first = p->child;
    if (first && cJSON_IsString(first)) {
        if (cJSON_GetArraySize(p) != 1)
            return fail(err, "prompt", "only one prompt per request is supported");
        r->prompt = strdup(first->valuestring);
        return r->prompt ? true : fail(err, "prompt", "out of memory");
    }
    r->prompt_is_ids = true;
    if (!get_ids(p, "prompt", &r->prompt_ids, &r->n_prompt_ids, err))
        return false;
    return r->n_prompt_ids > 0 ? true : fail(err, "prompt", "'prompt' is empty");
}

/* Content is a string or an array of parts; text parts are joined. */
static bool message_content(const cJSON *c, char **out, serve_error *err) {
    if (!c) {
        *out = strdup("");
        return *out ? true : fail(err, "messages", "out of memory");
    }
    if (cJSON_IsString(c)) {
        *out = strdup(c->valuestring);
        return *out ? true : fail(err, "messages", "out of memory");
    }
    if (!cJSON_IsArray(c))
        return fail(err, "messages", "a message's 'content' must be a string or an array of parts");
    size_t total = 0;
    const cJSON *part;
    cJSON_ArrayForEach(part, c) {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(part, "type");
        const cJSON *text = cJSON_GetObjectItemCaseSensitive(part, "text");
        if (!cJSON_IsObject(part) || !cJSON_IsString(type) || strcmp(type->valuestring, "text"))
            return fail(err, "messages", "only content parts of type 'text' are supported");
        if (!cJSON_IsString(text))
            return fail(err, "messages", "a text part needs a string 'text'");
        total += strlen(text->valuestring);
    }
    *out = malloc(total + 1);
    if (!*out)
        return fail(err, "messages", "out of memory");
    size_t k = 0;
    cJSON_ArrayForEach(part, c) {
        const char *t = cJSON_GetObjectItemCaseSensitive(part, "text")->valuestring;
        size_t n = strlen(t);
        memcpy(*out + k, t, n);
        k += n;
    }
    (*out)[k] = 0;
    return true;
}

/* An assistant's tool_calls and a tool result's tool_call_id / name, kept
 * as a JSON object for the template; arguments given as a JSON string
 * (OpenAI's form) become the object, which is what templates print with
 * tojson (Llama 3.x, Hermes, Qwen). */
static bool message_tools(const cJSON *m, serve_message *out, serve_error *err) {
    const cJSON *calls = field(m, "tool_calls"), *id = field(m, "tool_call_id");
    const cJSON *name = out->role == SERVE_ROLE_TOOL ? field(m, "name") : NULL; /* a user's name is no tool's */
    if (calls && (!cJSON_IsArray(calls) || !calls->child))
        calls = cJSON_IsArray(calls) ? NULL : calls; /* [] is the same as none */
    if (!calls && !id && !name)
        return true;
    if (calls && out->role != SERVE_ROLE_ASSISTANT)
        return fail(err, "messages", "only assistant messages carry 'tool_calls'");
    if ((id && !cJSON_IsString(id)) || (name && !cJSON_IsString(name)))
        return fail(err, "messages", "'tool_call_id' and 'name' must be strings");
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return fail(err, "messages", "out of memory");
    if (id)
        cJSON_AddStringToObject(o, "tool_call_id", id->valuestring);
    if (name)
        cJSON_AddStringToObject(o, "name", name->valuestring);
    bool ok = true;
    if (calls) {
        if (!cJSON_IsArray(calls) || cJSON_GetArraySize(calls) > SERVE_MAX_TOOLS)
            ok = fail(err, "messages", "'tool_calls' must be an array of at most %d calls", SERVE_MAX_TOOLS);
        cJSON *list = ok ? cJSON_AddArrayToObject(o, "tool_calls") : NULL;
        const cJSON *c;
        const cJSON *each = ok ? calls : NULL;
        cJSON_ArrayForEach(c, each) {
            const cJSON *fn = cJSON_GetObjectItemCaseSensitive(c, "function");
            const cJSON *fname = cJSON_GetObjectItemCaseSensitive(fn, "name");
            const cJSON *args = cJSON_GetObjectItemCaseSensitive(fn, "arguments");
            const cJSON *cid = cJSON_GetObjectItemCaseSensitive(c, "id");
            if (!cJSON_IsObject(c) || !cJSON_IsObject(fn) || !cJSON_IsString(fname) ||
                (args && !cJSON_IsString(args) && !cJSON_IsObject(args)) || (cid && !cJSON_IsString(cid))) {
                ok = fail(err, "messages", "each tool call needs 'function' with a string 'name' and 'arguments' "
                          "(a JSON string or object)");
                break;
            }
            cJSON *call = cJSON_CreateObject(), *f = cJSON_CreateObject();
            cJSON_AddItemToArray(list, call);
            if (cid)
                cJSON_AddStringToObject(call, "id", cid->valuestring);
            cJSON_AddStringToObject(call, "type", "function");
            cJSON_AddItemToObject(call, "function", f);
            cJSON_AddStringToObject(f, "name", fname->valuestring);
            cJSON *a = NULL;
            if (args && cJSON_IsString(args))
                a = cJSON_Parse(args->valuestring);
            else if (args)
                a = cJSON_Duplicate(args, true);
            if (!a) /* not JSON: the text as it came */
                a = args ? cJSON_CreateString(args->valuestring) : cJSON_CreateObject();
            cJSON_AddItemToObject(f, "arguments", a);
        }
    }
    if (ok && !(out->tool_json = cJSON_PrintUnformatted(o)))
        ok = fail(err, "messages", "out of memory");
    cJSON_Delete(o);
    return ok;
}

/* tools and tool_choice. */
static bool parse_tools(const cJSON *obj, serve_request *r, serve_error *err) {
    const cJSON *tools = field(obj, "tools"), *choice = field(obj, "tool_choice");
    if (tools && !cJSON_IsArray(tools))
        return fail(err, "tools", "'tools' must be an array");
    int n = tools ? cJSON_GetArraySize(tools) : 0;
    if (n > SERVE_MAX_TOOLS)
        return fail(err, "tools", "'tools' holds at most %d tools", SERVE_MAX_TOOLS);
    const cJSON *t;
    cJSON_ArrayForEach(t, tools) {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(t, "type");
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(t, "function");
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(fn, "name");
        const cJSON *params = cJSON_GetObjectItemCaseSensitive(fn, "parameters");
        if (!cJSON_IsObject(t) || !cJSON_IsString(type) || strcmp(type->valuestring, "function"))
            return fail(err, "tools", "'tools': each tool must be {\"type\": \"function\", \"function\": {...}}");
        if (!cJSON_IsObject(fn) || !cJSON_IsString(name) || !name->valuestring[0] || strlen(name->valuestring) > 64)
            return fail(err, "tools", "'tools': each tool function needs a 'name' of 1 to 64 characters");
        if (params && !cJSON_IsObject(params))
            return fail(err, "tools", "'tools': a tool's 'parameters' must be a JSON schema (an object)");
    }
    r->tool_choice = n ? SERVE_TOOLS_AUTO : SERVE_TOOLS_NONE;
    if (choice) {
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(choice, "function");
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(fn, "name");
        if (cJSON_IsString(choice) && !strcmp(choice->valuestring, "none"))
            r->tool_choice = SERVE_TOOLS_NONE;
        else if (cJSON_IsString(choice) && !strcmp(choice->valuestring, "auto"))
            ;
        else if (cJSON_IsString(choice) && !strcmp(choice->valuestring, "required"))
            r->tool_choice = SERVE_TOOLS_REQUIRED;
        else if (cJSON_IsObject(choice) && cJSON_IsString(name) && strlen(name->valuestring) < sizeof r->tool_name) {
            r->tool_choice = SERVE_TOOLS_NAMED;
            snprintf(r->tool_name, sizeof r->tool_name, "%s", name->valuestring);
        } else {
            return fail(err, "tool_choice", "'tool_choice' must be \"none\", \"auto\", \"required\" or "
                        "{\"type\": \"function\", \"function\": {\"name\": ...}}");
        }
        if (!n && r->tool_choice >= SERVE_TOOLS_REQUIRED)
            return fail(err, "tool_choice", "'tool_choice' asks for a tool call but 'tools' is empty");
        bool found = r->tool_choice != SERVE_TOOLS_NAMED;
        cJSON_ArrayForEach(t, tools) {
            const cJSON *tn = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(t, "function"), "name");
            found |= !strcmp(tn->valuestring, r->tool_name);
        }
        if (!found)
            return fail(err, "tool_choice", "'tool_choice' names '%.60s', which is not among the tools", r->tool_name);
    }
    if (n && !(r->tools_json = cJSON_PrintUnformatted(tools)))
        return fail(err, "tools", "out of memory");
    return true;
}

static bool parse_messages(const cJSON *obj, serve_request *r, serve_error *err) {
    const cJSON *ms = field(obj, "messages");
    if (!ms)
        return fail(err, "messages", "'messages' is required");
    if (!cJSON_IsArray(ms))
        return fail(err, "messages", "'messages' must be an array");
    int n = cJSON_GetArraySize(ms);
    if (n == 0)
        return fail(err, "messages", "'messages' is empty");
    if (n > SERVE_MAX_MESSAGES)
        return fail(err, "messages", "'messages' holds at most %d messages", SERVE_MAX_MESSAGES);
    r->messages = calloc((size_t)n, sizeof *r->messages);
    if (!r->messages)
        return fail(err, "messages", "out of memory");
    const cJSON *m;
    cJSON_ArrayForEach(m, ms) {
        if (!cJSON_IsObject(m))
            return fail(err, "messages", "each message must be an object");
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
        if (!cJSON_IsString(role))
            return fail(err, "messages", "each message needs a string 'role'");
        /* Counted before it is filled, so that serve_request_free frees
         * what a message that fails half-way has already allocated. */
        serve_message *out = &r->messages[r->n_messages++];
        const char *rs = role->valuestring;
        if (!strcmp(rs, "system") || !strcmp(rs, "developer"))
            out->role = SERVE_ROLE_SYSTEM;
        else if (!strcmp(rs, "user"))
            out->role = SERVE_ROLE_USER;
        else if (!strcmp(rs, "assistant"))
            out->role = SERVE_ROLE_ASSISTANT;
        else if (!strcmp(rs, "tool"))
            out->role = SERVE_ROLE_TOOL;
        else
            return fail(err, "messages", "unsupported role '%.40s' (system, developer, user, assistant, tool)", rs);
        if (field(m, "function_call"))
            return fail(err, "messages", "'function_call' in messages is not supported (use 'tool_calls')");
        if (!message_tools(m, out, err))
            return false;
        out->content_null = !field(m, "content");
        if (!message_content(field(m, "content"), &out->content, err))
            return false;
    }
    return true;
}

static bool parse_object(serve_kind kind, const cJSON *root, int64_t cap, serve_request *r, serve_error *err) {
    if (kind == SERVE_REQ_TOKENIZE) {
        const cJSON *c = field(root, "content");
        if (!cJSON_IsString(c))
            return fail(err, "content", "'content' must be a string");
        if (!(r->content = strdup(c->valuestring)))
            return fail(err, "content", "out of memory");
        return get_bool(root, "add_special", &r->add_special, err);
    }
    if (kind == SERVE_REQ_DETOKENIZE) {
        const cJSON *t = field(root, "tokens");
        if (!cJSON_IsArray(t))
            return fail(err, "tokens", "'tokens' must be an array of token ids");
        return get_ids(t, "tokens", &r->tokens, &r->n_tokens, err);
    }
    if (kind == SERVE_REQ_COMPLETION && !parse_prompt(root, r, err))
        return false;
    if (kind == SERVE_REQ_CHAT && !parse_messages(root, r, err))
        return false;
    if (kind == SERVE_REQ_COMPLETION) {
        const cJSON *t = field(root, "tools"), *tc = field(root, "tool_choice");
        if (t && (!cJSON_IsArray(t) || t->child))
            return fail(err, "tools", "'tools' belongs to /v1/chat/completions");
        if (tc && !(cJSON_IsString(tc) && (!strcmp(tc->valuestring, "none") || !strcmp(tc->valuestring, "auto"))))
            return fail(err, "tool_choice", "'tool_choice' belongs to /v1/chat/completions");
    }
    return parse_sampling(root, cap, r, err) && parse_choices(kind, root, r, err) && parse_format(root, r, err) &&
           (kind != SERVE_REQ_CHAT || parse_tools(root, r, err)) && refuse_unsupported(root, err);
}

bool serve_request_parse(serve_kind kind, const char *body, size_t len, int64_t max_tokens_cap,
                         serve_request *req, serve_error *err) {
    memset(req, 0, sizeof *req);
    req->kind = kind;
    req->max_tokens = -1;
    req->n_choices = 1;
    err->message[0] = 0;
    err->param = NULL;
    const char *end = NULL;
    pthread_mutex_lock(&parse_lock);
    cJSON *root = body && len ? cJSON_ParseWithLengthOpts(body, len, &end, false) : NULL;
    pthread_mutex_unlock(&parse_lock);
    while (root && end < body + len && strchr(" \t\r\n", *end) && *end)
        end++;
    if (root && end != body + len) { /* one JSON value and nothing after it */
        cJSON_Delete(root);
        root = NULL;
    }
    if (!root)
        return fail(err, NULL, "the body is not valid JSON");
    bool ok = cJSON_IsObject(root) ? parse_object(kind, root, max_tokens_cap, req, err)
                                   : fail(err, NULL, "the body must be a JSON object");
    cJSON_Delete(root);
    return ok;
}

void serve_request_free(serve_request *r) {
    if (!r)
        return;
    free(r->prompt);
    free(r->prompt_ids);
    for (int i = 0; i < r->n_messages; i++) {
        free(r->messages[i].content);
        free(r->messages[i].tool_json);
    }
    free(r->tools_json);
    free(r->messages);
    for (int i = 0; i < r->n_stop; i++)
        free(r->stop[i]);
    free(r->content);
    free(r->tokens);
    free(r->bias_ids);
    free(r->bias_vals);
    free(r->grammar);
    memset(r, 0, sizeof *r);
}
