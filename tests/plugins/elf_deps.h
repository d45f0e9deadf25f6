/* Reads a shared object's dynamic section (our own ELF64 parser, every
 * offset bounds-checked) to tell whether it depends on libtport. */
#ifndef TPORT_TEST_ELF_DEPS_H
#define TPORT_TEST_ELF_DEPS_H

#include <stdbool.h>
#include <stddef.h>

typedef struct elf_deps {
    int n_needed;               /* DT_NEEDED entries                        */
    bool needs_libtport;        /* a DT_NEEDED names libtport*              */
    bool imports_tport_symbol;  /* an undefined dynamic symbol tport_*      */
    char detail[256];           /* the offending name, or the parse error   */
} elf_deps;

/* False if the file cannot be read or is not a well-formed ELF64 object. */
bool elf_deps_read(const char *path, elf_deps *out);

#endif
