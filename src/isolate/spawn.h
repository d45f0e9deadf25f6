/* Starting and ending the helper process of one isolated plug-in. */
#ifndef TPORT_ISOLATE_SPAWN_H
#define TPORT_ISOLATE_SPAWN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Starts `helper` with one end of a socketpair as its descriptor 3 and
 * nothing else (stdin and stdout are /dev/null, stderr is kept for its log
 * lines), a sanitised environment and a parent-death signal.  `keep_env`
 * (TPORT_ISOLATE_ENV, ','-separated; may be NULL) names more variables the
 * helper keeps.  Returns the pid and the host's end in *sock (O_CLOEXEC),
 * or -1 with a reason. */
pid_t iso_spawn(const char *helper, const char *keep_env, int *sock, char *why, size_t cap);

/* Ends the helper: when `peer_gone` (it closed the socket or died) it is
 * given a moment to finish dying so its own fate can be told; then it is
 * killed with SIGKILL and reaped.  Writes how it ended ("killed by signal
 * 11 (SIGSEGV)", "exited with status 3") into desc. */
void iso_reap(pid_t pid, bool peer_gone, char *desc, size_t cap);

/* Waits up to ms for a helper that was told to shut down to exit; kills
 * and reaps it otherwise.  True if it exited with status 0. */
bool iso_reap_clean(pid_t pid, long long ms);

#endif
