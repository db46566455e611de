/* esc: untrusted text made safe to show: on a terminal (no byte it would obey) and in HTML (none it would parse).
 * Every byte plaunch did not write itself (a monitor file's fields, a log's lines, names in a directory) goes
 * through one of these before it reaches a terminal or a page. */
#ifndef PLAUNCH_ESC_H
#define PLAUNCH_ESC_H

#include <stddef.h>
#include <stdio.h>

#define ESC_LINES 1 /* newlines and tabs pass as they are (a block of several lines) */

/* The first len bytes of s (fewer at a NUL) as a terminal shows them and never obeys them: C0 controls, DEL, the
 * C1 controls (a raw byte or UTF-8) and every byte of invalid UTF-8 become \xNN; valid UTF-8 stays. Into buf (cap
 * >= 1, NUL-terminated, cut only between whole characters). Returns strlen(buf). */
size_t esc_term(char *buf, size_t cap, const char *s, size_t len, int flags);
/* esc_term of all of s, in a new string (the caller frees); NULL for NULL or when out of memory. */
char *esc_term_dup(const char *s, int flags);
/* s as HTML text or a quoted attribute value: & < > " ' as entities, and what esc_term escapes as \xNN (tab and
 * newline pass). */
void esc_html(FILE *out, const char *s);

#endif
