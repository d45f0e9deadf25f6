/* tport backends [-v] [--json] [--probe]: every candidate the registry
 * examined — file, backend name and version, negotiated ABI, score,
 * status (active / shadowed / rejected) with the reason, and devices. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "tport/registry.h"
#include "tport/tport.h"

static const char *kind_name(int32_t kind) {
    switch (kind) {
    case TPORT_DEVICE_CPU: return "cpu";
    case TPORT_DEVICE_GPU: return "gpu";
    case TPORT_DEVICE_ACCEL: return "accel";
    case TPORT_DEVICE_REMOTE: return "remote";
    default: return "unknown";
    }
}

static void json_isa_list(uint64_t isa) {
    char names[256];
    tport_isa_names(isa, names, sizeof names);
    putchar('[');
    int first = 1;
    for (char *save = NULL, *tok = strtok_r(names, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        printf("%s", first ? "" : ", ");
        tool_json_string(stdout, tok);
        first = 0;
    }
    putchar(']');
}

static void print_json(void) {
    char dir[4096];
    tport_installed_backend_dir(dir, sizeof dir);
    printf("{\n  \"host_abi\": \"%d.%d\",\n  \"cpu_features\": ", TPORT_ABI_MAJOR, TPORT_ABI_MINOR);
    json_isa_list(tport_isa_host());
    printf(",\n  \"installed_dir\": ");
    tool_json_string(stdout, dir);
    printf(",\n  \"active\": [");
    for (int i = 0; i < tport_backend_count(); i++) {
        printf("%s", i ? ", " : "");
        tool_json_string(stdout, tport_backend_name(i));
    }
    printf("],\n  \"candidates\": [");
    int n = tport_registry_candidate_count();
    for (int i = 0; i < n; i++) {
        tport_candidate_report r;
        tport_registry_candidate(i, &r);
        printf("%s\n    {\"path\": ", i ? "," : "");
        tool_json_string(stdout, r.path);
        printf(", \"origin\": ");
        tool_json_string(stdout, r.origin);
        printf(", \"name\": ");
        tool_json_string(stdout, r.name);
        printf(", \"version\": ");
        tool_json_string(stdout, r.version);
        if (r.abi_major)
            printf(", \"abi\": \"%u.%u\"", r.abi_major, r.abi_minor);
        else
            printf(", \"abi\": null");
        printf(", \"score\": %d, \"status\": ", r.score);
        tool_json_string(stdout, tport_candidate_status_name(r.status));
        printf(", \"reason\": ");
        tool_json_string(stdout, r.reason);
        printf(", \"fallback\": %s", r.fallback ? "true" : "false");
        printf(", \"isolated\": %s", r.isolated ? "true" : "false");
        printf(", \"required_isa\": ");
        json_isa_list(r.required_isa);
        printf(", \"devices\": [");
        for (int d = 0; d < r.n_devices; d++) {
            const tport_device_info *dev = &r.devices[d];
            printf("%s{\"name\": ", d ? ", " : "");
            tool_json_string(stdout, dev->name);
            printf(", \"kind\": ");
            tool_json_string(stdout, kind_name(dev->kind));
            printf(", \"description\": ");
            tool_json_string(stdout, dev->description);
            printf(", \"memory_total\": %" PRIu64 ", \"memory_free\": %" PRIu64, dev->memory_total,
                   dev->memory_free);
            uint64_t caps = r.abi_minor >= 1 ? dev->caps : 0;
            printf(", \"device_memory\": %s, \"host_readable\": %s, \"async\": %s}",
                   caps & TPORT_DEVICE_CAP_DEVICE_MEMORY ? "true" : "false",
                   caps & TPORT_DEVICE_CAP_HOST_READABLE ? "true" : "false",
                   caps & TPORT_DEVICE_CAP_ASYNC ? "true" : "false");
        }
        printf("]}");
    }
    printf("\n  ]\n}\n");
}

static void print_memory(uint64_t bytes) {
    if (!bytes)
        printf("memory unknown");
    else if (bytes >= (1ull << 30))
        printf("%.1f GiB", (double)bytes / (double)(1ull << 30));
    else
        printf("%.1f MiB", (double)bytes / (double)(1ull << 20));
}

static void print_text(bool verbose) {
    char buf[512];
    tport_isa_names(tport_isa_host(), buf, sizeof buf);
    printf("host backend ABI %d.%d; CPU features: %s\n", TPORT_ABI_MAJOR, TPORT_ABI_MINOR, buf[0] ? buf : "(none)");
    if (verbose) {
        tport_installed_backend_dir(buf, sizeof buf);
        printf("installed backends folder: %s\n", buf[0] ? buf : "(unknown)");
    }
    printf("active, in preference order:");
    for (int i = 0; i < tport_backend_count(); i++) {
        printf(" %s%s%s", tport_backend_name(i), tport_backend_is_fallback(i) ? " (embedded, fallback)" : "",
               tport_backend_is_isolated(i) ? " (isolated)" : "");
    }
    printf("\n\n");
    int n = tport_registry_candidate_count();
    for (int i = 0; i < n; i++) {
        tport_candidate_report r;
        tport_registry_candidate(i, &r);
        printf("%-8s %-10s %-8s", tport_candidate_status_name(r.status), r.name[0] ? r.name : "-",
               r.version[0] ? r.version : "-");
        if (r.abi_major)
            printf(" ABI %u.%u", r.abi_major, r.abi_minor);
        else
            printf(" ABI -  ");
        if (r.score >= 0)
            printf("  score %-4d", r.score);
        else
            printf("  score -   ");
        if (strcmp(r.origin, "embedded"))
            printf("  %s (%s%s)\n", r.path, r.origin, r.isolated ? ", isolated" : "");
        else
            printf("  (embedded in libtport)\n");
        if (r.reason[0])
            printf("         %s\n", r.reason);
        if (verbose && r.required_isa) {
            tport_isa_names(r.required_isa, buf, sizeof buf);
            printf("         needs: %s\n", buf);
        }
        if (r.status == TPORT_CANDIDATE_ACTIVE || verbose) {
            for (int d = 0; d < r.n_devices; d++) {
                const tport_device_info *dev = &r.devices[d];
                printf("         device %d: %s (%s, ", d, dev->name, kind_name(dev->kind));
                print_memory(dev->memory_total);
                uint64_t caps = r.abi_minor >= 1 ? dev->caps : 0;
                printf("%s%s%s%s)", caps & TPORT_DEVICE_CAP_DEVICE_MEMORY ? ", memory of its own" : ", host memory",
                       caps & TPORT_DEVICE_CAP_HOST_READABLE ? ", reads host memory" : "",
                       caps & TPORT_DEVICE_CAP_ASYNC ? ", asynchronous" : "",
                       r.abi_minor >= 5 && (caps & TPORT_DEVICE_CAP_F16_PRODUCTS) ? ", f32 products on f16 operands"
                                                                                  : "");
                if (verbose && dev->description[0])
                    printf(" %s", dev->description);
                printf("\n");
            }
        }
    }
}

int cmd_backends(int argc, char **argv) {
    bool verbose = false, json = false, probe = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--isolate")) {
            if (i + 1 >= argc || tport_backend_isolate(argv[++i]) != TPORT_STATUS_OK)
                return tool_fail(2, "backends: --isolate needs a backend name");
        } else if (!strcmp(argv[i], "-v") || !strcmp(argv[i], "--verbose"))
            verbose = true;
        else if (!strcmp(argv[i], "--json"))
            json = true;
        else if (!strcmp(argv[i], "--probe"))
            probe = true;
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: tport backends [-v] [--json] [--probe] [--isolate NAME]\n"
                   "  every backend candidate: file, name, version, negotiated ABI, score,\n"
                   "  status (active/shadowed/rejected) and why, devices.\n"
                   "  --probe  load every plug-in first in a child process; report crashes\n"
                   "  --isolate NAME  load the plug-in NAME (or all) in a helper process\n"
                   "  env: TPORT_BACKEND_PATH (files/folders, ':'), TPORT_BACKEND (names, ','),\n"
                   "       TPORT_LOG=debug (every decision), TPORT_NO_UNLOAD=1,\n"
                   "       TPORT_ISA_DISABLE=avx512f,... (treat CPU features as absent),\n"
                   "       TPORT_BACKEND_ISOLATE=NAME,...|all (run plug-ins out of process)\n");
            return 0;
        } else
            return tool_fail(2, "backends: unknown option '%s'", argv[i]);
    }
    if (probe)
        tport_registry_set_probe(true);
    tport_registry_init();
    if (json)
        print_json();
    else
        print_text(verbose);
    fflush(stdout);
    tport_registry_shutdown();
    return 0;
}
