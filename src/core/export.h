/* libtport exports what the headers of include/tport declare and nothing else, with
 * one transitional exception: the internal functions that tools/tport
 * still calls (the architecture table, for tport synth), marked
 * TPORT_INTERNAL_EXPORT.  Each is a debt: it goes when
 * its caller has a public API.  The list is checked
 * (tests/tools/check_exports.sh) and may only shrink. */
#ifndef TPORT_CORE_EXPORT_H
#define TPORT_CORE_EXPORT_H

#if defined(__GNUC__)
#define TPORT_INTERNAL_EXPORT __attribute__((visibility("default")))
#else
#define TPORT_INTERNAL_EXPORT
#endif

#endif
