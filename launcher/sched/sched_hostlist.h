/* sched_hostlist: Slurm's compressed host lists ("gpu[001-004,010],login1") expanded as scontrol does. */
#ifndef PLAUNCH_SCHED_HOSTLIST_H
#define PLAUNCH_SCHED_HOSTLIST_H

#include <stddef.h>

/* The grammar (SLURM_JOB_NODELIST, SLURM_STEP_NODELIST):
 *   list  := item (',' item)*
 *   item  := text | (text? '[' group ']')+        text: any bytes but ',' '[' ']', space and control characters
 *   group := range (',' range)*                   range: N or N-M with N <= M, decimal digits only
 * An item with several groups is their cartesian product in the order `scontrol show hostnames` prints it: the
 * last group varies fastest, then the first, the second, ... ("a[1-2]b[1-2]c[1-2]" gives a1b1c1 a1b1c2 a2b1c1
 * a2b1c2 a1b2c1 ...; with two groups that is plain lexicographic order). A range prints its numbers zero-padded
 * to the number of digits of its low end, as scontrol does: [8-10] gives 8 9 10, [08-10] 08 09 10, [008-10]
 * 008 009 010, [8-010] 8 9 10. Duplicates are kept, in the order written (scontrol neither sorts nor merges).
 *
 * Refused here although scontrol accepts them (it prints what is noted; none comes from Slurm itself):
 *   empty items ("a,,b", "a,", ",a", ""; scontrol skips them), spaces, tabs, newlines (scontrol separates items
 *   with them too) and other control characters in a name; ']' without '[' ("a]" is printed as "a]") and a '['
 *   never closed ("a[1-2" prints "a]"); '+' or a space in a range ("a[+1]", "a[ 1]" print "a01"); a range with no
 *   high end ("a[1-]" prints "a1"); numbers above 18446744073709551615 (scontrol clamps them to it); a number
 *   longer than SCHED_HOSTLIST_NAME_MAX digits, a name longer than SCHED_HOSTLIST_NAME_MAX characters; more
 *   than SCHED_HOSTLIST_GROUPS_MAX groups in one item. Refused by both: text after an item's last ']'
 *   ("a[1-2]b"), '[' inside '[', empty groups and ranges ("a[]", "a[1,]"), ranges that go down ("a[3-1]").
 *   scontrol refuses a single range of more than 65536 hosts; here the bound is the caller's max, on the whole
 *   list.
 *
 * Bounded: the whole expression is checked in one pass over its characters (no allocation, no walk of a range)
 * before fn sees any host, so a bad or oversized list has no partial effect and "a[0-999999999]" fails at once
 * on max; the walk then costs O(length of the names) per host. Calls only libc. */

#define SCHED_HOSTLIST_NAME_MAX 255  /* characters in one host name, without the NUL */
#define SCHED_HOSTLIST_GROUPS_MAX 8  /* bracket groups in one item */
#define SCHED_HOSTLIST_STOPPED (-2)  /* sched_hostlist_each: fn asked to stop */

/* Called once per host, index from 0; name is NUL-terminated and valid during the call only. Returns 0 to go on,
 * anything else to stop the walk. */
typedef int (*sched_hostlist_fn)(void *arg, int index, const char *name);

/* Calls fn(arg, index, name) for each host of expr in order (fn may be NULL: count only). Returns the number of
 * hosts; -1 with a message in err when expr is NULL, empty or bad, or has more than max hosts (max >= 1);
 * SCHED_HOSTLIST_STOPPED when fn returned non-zero (err says at which; fn saw every host up to that one).
 * Messages start with the expression in quotes (shortened when long) and name the bad part, so that a caller
 * can put the variable's name first: "SLURM_STEP_NODELIST 'gpu[3-1]': range 3-1 goes down". */
int sched_hostlist_each(const char *expr, int max, sched_hostlist_fn fn, void *arg, char *err, size_t errlen);

/* The host at position index (0 = the first, the coordinator's) into out (cap bytes, NUL included), found without
 * walking the hosts before it. Returns 0, or -1 with a message in err (and out empty) when the expression is bad
 * or has more than INT_MAX hosts, index is negative or past the end, or the name does not fit in cap. */
int sched_hostlist_nth(const char *expr, int index, char *out, size_t cap, char *err, size_t errlen);

#endif
