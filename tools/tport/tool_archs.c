/* The architectures a --help or an error names: the library's table, so
 * the tool never lists them by hand. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "tport/tport.h"

const char *tool_arch_list(char *buf, size_t cap) {
    size_t used = 0;
    buf[0] = '\0';
    const char *name;
    for (int i = 0; (name = tport_arch_name_at(i)) && used < cap; i++) {
        int n = snprintf(buf + used, cap - used, "%s%s", i ? ", " : "", name);
        used += n > 0 ? (size_t)n : 0;
    }
    return buf;
}

bool tool_arch_known(const char *name) {
    const char *a;
    for (int i = 0; (a = tport_arch_name_at(i)); i++)
        if (!strcmp(a, name))
            return true;
    return false;
}
