/* The names of the signals that end a crashed or killed child process
 * (a probe child, an isolation helper), for the one line that says so. */
#ifndef TPORT_CORE_SIGNAL_NAME_H
#define TPORT_CORE_SIGNAL_NAME_H

/* "SIGSEGV", "SIGILL", ...; NULL for a signal not in the list (the caller
 * words that case). */
const char *tport_signal_name(int sig);

#endif
