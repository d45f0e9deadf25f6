/* A plug-in whose tport_backend_entry is a data object, not a function:
 * dlsym finds it all the same, and calling it would jump into data.  It
 * deliberately does not include tport/backend.h (which declares the entry
 * as a function). */
__attribute__((visibility("default"))) unsigned char tport_backend_entry[64] = {0xff, 0xff, 0xff, 0xff};
