/* wire_priv: what the wire module's files share and nobody else calls: wire_check's halves (wire_rules.c), the wire
 * table's walk (wire_check.c) and the formatter. */
#ifndef PLAUNCH_WIRE_PRIV_H
#define PLAUNCH_WIRE_PRIV_H

#include "common/wire/wire.h"

/* Halves of wire_check used by wire_decode (wire_rules.c): the envelope's own fields; the body against `allowed`. */
int wire_check_envelope(const wire_msg_t *msg, char *err, size_t errlen);
int wire_check_body(const wire_msg_t *msg, uint64_t allowed, char *err, size_t errlen);
/* Every non-message field of m against its rule in the wire table; prefix names m in messages ("" for the
 * envelope). 0 or -1 (wire_check.c). */
int wire_check_fields(const ProtobufCMessage *m, const char *prefix, char *err, size_t errlen);
/* Same protocol version, same schema: a field this build does not know means a peer built from other sources.
 * name: m's name in the message. 0 or -1 (wire_check.c). */
int wire_check_unknown(const ProtobufCMessage *m, const char *name, char *err, size_t errlen);
/* Formats a message into err[errlen] when err is not NULL; returns -1 (wire_names.c). */
int wire_fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
