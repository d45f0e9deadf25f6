/* Plug-ins never link against libtport: every plug-in the build makes (the
 * CPU variants and the test plug-ins) is checked for a DT_NEEDED on
 * libtport and for undefined tport_* symbols.  A deliberately linked
 * plug-in proves the check can fail. */
#include <dirent.h>
#include <stdio.h>
#include <string.h>

#include "elf_deps.h"
#include "../test_util.h"

/* Checks every plug-in file in dir; returns how many there were and, in
 * *n_cpu, how many are CPU variants (libtport-cpu-*). */
static int check_folder(const char *dir, int *n_cpu) {
    *n_cpu = 0;
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 4 || strcmp(e->d_name + len - 3, ".so") || strstr(e->d_name, "garbage"))
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        elf_deps deps;
        CHECK(elf_deps_read(path, &deps), "%s: %s", path, deps.detail);
        CHECK(!deps.needs_libtport, "%s depends on libtport: %s", path, deps.detail);
        CHECK(!deps.imports_tport_symbol, "%s %s from the host", path, deps.detail);
        n++;
        if (!strncmp(e->d_name, "libtport-cpu-", 13))
            (*n_cpu)++;
    }
    closedir(d);
    return n;
}

int main(void) {
    int cpu, not_cpu;
    check_folder(CPU_VARIANT_DIR, &cpu);
#if defined(__x86_64__)
    CHECK(cpu == 3, "expected 3 cpu variants in %s, found %d", CPU_VARIANT_DIR, cpu);
#endif
    int fakes = check_folder(FAKE_DIR, &not_cpu);
    CHECK(fakes >= 10, "expected the fake plug-ins in %s, found %d", FAKE_DIR, fakes);

    /* negative control: this one links libtport on purpose */
    elf_deps deps;
    CHECK(elf_deps_read(FAKE_SPECIAL_DIR "/libfake_links_libtport.so", &deps), "%s", deps.detail);
    CHECK(deps.needs_libtport, "the check missed a plug-in that links libtport");
    CHECK(deps.n_needed >= 1, "no DT_NEEDED at all in the linked control");

    /* malformed input is reported, not crashed on */
    CHECK(!elf_deps_read(FAKE_DIR "/libfake_garbage.so", &deps), "garbage parsed as ELF");
    CHECK(!elf_deps_read(FAKE_DIR "/does-not-exist.so", &deps), "missing file parsed");
    return test_finish("test_plugin_deps");
}
