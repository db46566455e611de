/* wire_priv: what the wire module's files share and nobody else calls: wire_check's halves and the formatter. */
#ifndef PLAUNCH_WIRE_PRIV_H
#define PLAUNCH_WIRE_PRIV_H

#include "wire.h"

/* Halves of wire_check used by wire_decode: the envelope's own fields; the body against `allowed`. */
int wire_check_envelope(const wire_msg_t *msg, char *err, size_t errlen);
int wire_check_body(const wire_msg_t *msg, uint64_t allowed, char *err, size_t errlen);
/* Formats a message into err[errlen] when err is not NULL; returns -1 (wire_names.c). */
int wire_fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
