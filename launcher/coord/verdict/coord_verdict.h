/* coord_verdict: the job's outcome (its exit status and root cause) and its restart budget, decided here and
 * nowhere else. The coordinator's other parts tell it what happened and act on its answer (restart, or end).
 *
 * The rule for the exit status
 *   0 when nothing failed; otherwise the status of the first failure, where failures have three ranks:
 *     COORD_VERDICT_FATAL   the coordinator cannot go on (a message it must send cannot be encoded): 125.
 *     COORD_VERDICT_JUDGED  the coordinator ends the running job: a worker failed and is not restarted (no
 *                           restart left, or it exited 126 or 127: its command could not run), with the worker's
 *                           status (its exit code, 128 + N for signal N); the job hung and is not restarted: 124;
 *                           the rendezvous deadline passed: 125.
 *     COORD_VERDICT_TOLD    the coordinator is told the job ends: a stop signal N to its plaunch (Ctrl-C, the
 *                           scheduler): 128 + N; a node lost by a job that cannot go on without it: 125; a node
 *                           that ended with a non-zero status (its BYE): that status.
 *   A failure replaces an earlier one of a lower rank; of equal ranks the first wins. The root cause goes with
 *   the status: it is the text of the failure that set it.
 *   What the stop under way causes is no failure, and callers do not report it: a worker that ends after the
 *   generation was stopped, a rank ended for its traceback while a hang's stacks are taken (coord_verdict_hold).
 *
 * The restart budget
 *   --max-restarts restarts in all, for failed workers and hangs (--on-hang restart) alike: each restart spends
 *   one. An elastic job that loses a node or grows restarts without spending one (that is no failure), and so
 *   does a job whose lost node a spare replaces (--spares).
 *
 * Restarts without progress (coord_verdict_failed)
 *   A failed generation made no progress when no rank reported a step beyond the best of the generations before
 *   it, or, in a job that reports no steps, when it ran less than --no-progress-time. After K restarts in a row
 *   of such generations (--max-no-progress-restarts K, 0 off), the next one that fails without progress ends the
 *   job, judged: COORD_VERDICT_NO_PROGRESS (123), its root cause naming the first failure of the series. Where
 *   the restart budget runs out at the same failure or before, the budget's ending stands (the worker's status).
 *   A failure on the same node as the failure before it is the node's (COORD_VERDICT_NODE_FAULT): with a spare,
 *   the coordinator swaps that node out rather than retry it.
 *
 * Pure state: no I/O but the "restart budget exhausted" log line; the unit test drives it with event tables. */
#ifndef PLAUNCH_COORD_VERDICT_H
#define PLAUNCH_COORD_VERDICT_H

#include <stdint.h>

enum coord_verdict_rank { COORD_VERDICT_NONE, COORD_VERDICT_TOLD, COORD_VERDICT_JUDGED, COORD_VERDICT_FATAL };

#define COORD_VERDICT_HUNG 124    /* a hung job that is not restarted */
#define COORD_VERDICT_NO_PROGRESS 123 /* restarts without progress: --max-no-progress-restarts */
#define COORD_VERDICT_PLAUNCH 125 /* plaunch's own failure: a lost node, a rendezvous deadline, the coordinator */

struct coord_verdict {
    int max_restarts, restarts_left;
    enum coord_verdict_rank rank; /* of the failure that set status; NONE: no failure yet */
    int status;
    int held;                     /* a hang's stacks are taken: the ranks that end meanwhile are no failure */
    char cause[4096];             /* the root cause, for the summary ("" none) */
    /* restarts without progress, and repeated failures of one node (coord_verdict_failed) */
    int max_no_progress, no_progress; /* K, and restarts in a row of generations without progress */
    char first[2048];             /* the first failure of that series, described */
    char node[160];               /* the node of the last failure ("" none) */
};

void coord_verdict_init(struct coord_verdict *v, int max_restarts);

/* The status of a worker that exited with code, or was killed by signal (non-zero). */
int coord_verdict_worker_status(uint32_t code, uint32_t signal);
/* A failed worker (exit code, or signal) may be restarted: anything but exit 126 or 127 (its command could not
 * run, and will not the next time). */
int coord_verdict_restartable(uint32_t code, uint32_t signal);

/* A failure that a restart could mend (want: the job asks for one: a restartable worker, --on-hang restart).
 * >0: the job restarts, this is restart number N of max_restarts (one spent); 0: it ends (want but none left is
 * logged), and the caller reports the failure with coord_verdict_fail. */
int coord_verdict_restart(struct coord_verdict *v, int want);

/* --max-no-progress-restarts K (0 off); what a generation that reports no steps must run is the caller's. */
void coord_verdict_no_progress(struct coord_verdict *v, int k);

#define COORD_VERDICT_NODE_FAULT 1 /* the node of this failure also failed the generation before */
#define COORD_VERDICT_STOPPED 2    /* the job ends: restarts made no progress (the outcome is set) */
/* A generation failed, restartable, with the budget not spent: node names the node of its first failure (any
 * stable text), progressed says whether it progressed, detail describes that failure (root-cause lines),
 * what describes the test ("no step beyond 40", "ran 0.2 s of --no-progress-time 60"). Call it before
 * coord_verdict_restart. Returns COORD_VERDICT_* bits. */
int coord_verdict_failed(struct coord_verdict *v, const char *job_id, const char *node, int progressed,
                         const char *detail, const char *what);

/* The restarts spent so far; a coordinator that takes over a job (etcd) goes on from those its predecessor spent. */
int coord_verdict_used(const struct coord_verdict *v);
void coord_verdict_resume(struct coord_verdict *v, int used);

/* A failure of that rank with that status (non-zero) and root cause (printf format; NULL or "" none). 1 when it
 * set the outcome, 0 when an earlier one stands. */
int coord_verdict_fail(struct coord_verdict *v, enum coord_verdict_rank rank, int status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* While held, workers that end are no failure (a hang's stacks are being taken). */
void coord_verdict_hold(struct coord_verdict *v, int on);
int coord_verdict_held(const struct coord_verdict *v);

/* The job's exit status (0: nothing failed), and its root cause ("" none). */
int coord_verdict_status(const struct coord_verdict *v);
const char *coord_verdict_cause(const struct coord_verdict *v);
enum coord_verdict_rank coord_verdict_rank(const struct coord_verdict *v);

#endif
