/* `tport types`: --json prints one JSON document listing every type of the
 * table (with the fields the help promises), --help succeeds, a bad option
 * fails.  Runs the built tool (TPORT_CLI_PATH). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "../test_util.h"
#include "quant/type_table.h"

/* Runs `tport <args>`, returns its exit status; stdout into buf. */
static int run(const char *args, char *buf, size_t cap) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' %s 2>/dev/null", TPORT_CLI_PATH, args);
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    size_t n = fread(buf, 1, cap - 1, p);
    buf[n] = 0;
    const int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int count(const char *s, const char *needle) {
    int n = 0;
    for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

int main(void) {
    static char out[1 << 20];
    CHECK(run("types --json", out, sizeof out) == 0, "types --json failed");
    const char *first = out + strspn(out, " \n");
    const char *last = out + strlen(out);
    while (last > out && (last[-1] == '\n' || last[-1] == ' '))
        last--;
    CHECK(*first == '{' && last > out && last[-1] == '}', "not one JSON object");
    CHECK(count(out, "{") == count(out, "}") && count(out, "[") == count(out, "]"), "unbalanced JSON");
    const int nt = tport_traits_count();
    CHECK(count(out, "\"name\": ") == nt, "%d types listed, table has %d", count(out, "\"name\": "), nt);
    static const char *fields[] = {"\"id\": ", "\"family\": ", "\"revision\": ", "\"block_size\": ",
                                   "\"block_bytes\": ", "\"bits_per_weight\": ", "\"defined_in\": ",
                                   "\"supported_by\": "};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        CHECK(count(out, fields[i]) == nt, "field %s appears %d times", fields[i], count(out, fields[i]));
    for (int i = 0; i < nt; i++) {
        char want[64];
        snprintf(want, sizeof want, "\"name\": \"%s\"", tport_traits_at(i)->info.name);
        CHECK(strstr(out, want) != NULL, "%s missing", want);
    }
    CHECK(strstr(out, "\"revision\": \"qnt0\"") && strstr(out, "\"revision\": \"qnt1\""), "revisions missing");

    CHECK(run("types", out, sizeof out) == 0 && strstr(out, "q4_0_qnt1"), "plain listing");
    CHECK(run("types --help", out, sizeof out) == 0 && strstr(out, "usage: tport types"), "--help");
    CHECK(run("types --no-such-option", out, sizeof out) != 0, "a bad option must fail");
    return test_finish("test_quant_cli_types");
}
