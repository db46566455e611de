/* summary: the root-cause block printed when a job fails: who failed first, how, when, and its last lines. */
#include "summary.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "log.h"
#include "output.h"

#define SUMMARY_TAIL_LINES 20

void summary_print(const struct job *job, const struct failure *f, int exit_code)
{
    char how[256], when[64], tail[8192], block[20480];
    if (!f->valid)
        return;
    const struct worker *w = &job->workers[f->local_rank];
    if (f->exec_errno)
        snprintf(how, sizeof how, "could not run '%s': %s (exit %d)", job->opt.prog_argv[0],
                 f->exec_errno == ENOENT ? "not found" : strerror(f->exec_errno), exit_code);
    else if (WIFSIGNALED(f->status))
        snprintf(how, sizeof how, "killed by signal %d (SIG%s)%s", WTERMSIG(f->status),
                 sigabbrev_np(WTERMSIG(f->status)), WCOREDUMP(f->status) ? ", core dumped" : "");
    else
        snprintf(how, sizeof how, "exit code %d", WEXITSTATUS(f->status));
    struct tm tm;
    time_t t = (time_t)f->when_realtime_s;
    gmtime_r(&t, &tm);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    output_tail(w, SUMMARY_TAIL_LINES, tail, sizeof tail);
    snprintf(block, sizeof block,
             "plaunch: ===== job %s failed: root cause =====\n"
             "  first failure : rank %d (local rank %d) on %s, generation %d\n"
             "  pid           : %d\n"
             "  status        : %s\n"
             "  time          : %s, %.3f s after launch\n"
             "  log           : %s/workerlog.%d\n"
             "  last lines of its log:\n%s"
             "plaunch: exiting with %d\n",
             job->job_id, f->rank, f->local_rank, job->hostname, f->generation, (int)f->pid, how, when,
             (double)(f->when_ns - job->start_ns) / 1e9, job->log_dir, f->rank, tail[0] ? tail : "    (empty)\n",
             exit_code);
    log_block(block, 1);
}
