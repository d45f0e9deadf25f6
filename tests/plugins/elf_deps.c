/* DT_NEEDED and undefined-symbol scan of an ELF64 file via its section
 * headers: SHT_DYNAMIC (+ its string table) and SHT_DYNSYM.  The file is
 * read whole; every table is checked to lie inside it. */
#include "elf_deps.h"

#include <elf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool inside(size_t size, uint64_t off, uint64_t len) {
    return off <= size && len <= size - off;
}

/* The NUL-terminated string at off in the string table [base, base+len). */
static const char *str_at(const unsigned char *f, uint64_t base, uint64_t len, uint64_t off) {
    if (off >= len || !memchr(f + base + off, '\0', len - off))
        return NULL;
    return (const char *)f + base + off;
}

static bool fail(elf_deps *out, const char *why) {
    snprintf(out->detail, sizeof out->detail, "%s", why);
    return false;
}

static bool scan(const unsigned char *f, size_t size, elf_deps *out) {
    if (size < sizeof(Elf64_Ehdr) || memcmp(f, ELFMAG, SELFMAG) || f[EI_CLASS] != ELFCLASS64)
        return fail(out, "not an ELF64 file");
    Elf64_Ehdr eh;
    memcpy(&eh, f, sizeof eh);
    if (eh.e_shentsize != sizeof(Elf64_Shdr) || !inside(size, eh.e_shoff, (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr)))
        return fail(out, "bad section header table");
    Elf64_Shdr *sh = malloc((size_t)eh.e_shnum * sizeof *sh + 1);
    if (!sh)
        return fail(out, "out of memory");
    memcpy(sh, f + eh.e_shoff, (size_t)eh.e_shnum * sizeof *sh);
    bool ok = true, saw_dynamic = false;
    for (unsigned i = 0; ok && i < eh.e_shnum; i++) {
        if (sh[i].sh_type != SHT_DYNAMIC && sh[i].sh_type != SHT_DYNSYM)
            continue;
        unsigned link = sh[i].sh_link;
        if (link >= eh.e_shnum || !inside(size, sh[i].sh_offset, sh[i].sh_size) ||
            !inside(size, sh[link].sh_offset, sh[link].sh_size)) {
            ok = fail(out, "dynamic table out of bounds");
            break;
        }
        uint64_t sbase = sh[link].sh_offset, slen = sh[link].sh_size;
        if (sh[i].sh_type == SHT_DYNAMIC) {
            saw_dynamic = true;
            for (uint64_t k = 0; k + sizeof(Elf64_Dyn) <= sh[i].sh_size; k += sizeof(Elf64_Dyn)) {
                Elf64_Dyn d;
                memcpy(&d, f + sh[i].sh_offset + k, sizeof d);
                if (d.d_tag == DT_NULL)
                    break;
                if (d.d_tag != DT_NEEDED)
                    continue;
                const char *name = str_at(f, sbase, slen, d.d_un.d_val);
                if (!name) {
                    ok = fail(out, "DT_NEEDED name out of bounds");
                    break;
                }
                out->n_needed++;
                if (!strncmp(name, "libtport", 8)) {
                    out->needs_libtport = true;
                    snprintf(out->detail, sizeof out->detail, "DT_NEEDED %s", name);
                }
            }
        } else {
            for (uint64_t k = sizeof(Elf64_Sym); k + sizeof(Elf64_Sym) <= sh[i].sh_size; k += sizeof(Elf64_Sym)) {
                Elf64_Sym s;
                memcpy(&s, f + sh[i].sh_offset + k, sizeof s);
                const char *name = str_at(f, sbase, slen, s.st_name);
                if (s.st_shndx == SHN_UNDEF && name && !strncmp(name, "tport_", 6)) {
                    out->imports_tport_symbol = true;
                    snprintf(out->detail, sizeof out->detail, "imports %s", name);
                }
            }
        }
    }
    free(sh);
    if (ok && !saw_dynamic)
        return fail(out, "no dynamic section: not a shared object");
    return ok;
}

bool elf_deps_read(const char *path, elf_deps *out) {
    memset(out, 0, sizeof *out);
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return fail(out, "cannot open");
    unsigned char *buf = NULL;
    size_t size = 0, cap = 0;
    for (;;) {
        if (size == cap) {
            cap = cap ? cap * 2 : 1 << 16;
            unsigned char *p = realloc(buf, cap);
            if (!p)
                break;
            buf = p;
        }
        size_t n = fread(buf + size, 1, cap - size, fp);
        if (!n)
            break;
        size += n;
    }
    fclose(fp);
    bool ok = buf && scan(buf, size, out);
    free(buf);
    return ok;
}
