/* plaunch.h: libplaunch, the worker-side API to the local plaunch agent (ranks, NCCL ids, barriers). */
/* Link with `pkg-config --cflags --libs plaunch`. A program started by plaunch finds its agent through the
 * environment plaunch gives every worker (PLAUNCH_AGENT, PLAUNCH_JOB_ID, RANK, WORLD_SIZE, LOCAL_RANK,
 * PLAUNCH_GENERATION; docs/environment.md). One handle per thread: calls on one handle must not overlap.
 * Every call that can fail returns -1 (or NULL) with errno set and, where there is a handle, a sentence from
 * plaunch_error() naming the cause. */
#ifndef PLAUNCH_H
#define PLAUNCH_H

#ifdef __cplusplus
extern "C" {
#endif

#define PLAUNCH_NCCL_ID_BYTES 128

typedef struct plaunch plaunch_t;

/* Connects to this node's agent. NULL with errno on failure: EINVAL when the program was not started by plaunch
 * (the variables above are missing or malformed; the reason is printed once on stderr), else the connection's
 * error. PLAUNCH_TIMEOUT_MS (default 600000) bounds every wait of plaunch_nccl_id. */
plaunch_t *plaunch_open(void);
/* Closes and sets *p to NULL; safe on NULL and twice. */
void plaunch_close(plaunch_t **p);
/* This worker's global rank (RANK), 0 .. world size - 1, in the current generation. */
int plaunch_rank(const plaunch_t *p);
/* The number of ranks in the current generation (WORLD_SIZE); after an elastic restart it may differ. */
int plaunch_world_size(const plaunch_t *p);
/* The rank among this node's workers (LOCAL_RANK); the worker's GPU is index LOCAL_RANK of CUDA_VISIBLE_DEVICES. */
int plaunch_local_rank(const plaunch_t *p);
/* The generation (PLAUNCH_GENERATION): 0, then one more after every job-wide restart; ids and barriers belong to
 * one generation. */
int plaunch_generation(const plaunch_t *p);
/* Rank 0 of the current generation calls ncclGetUniqueId; every rank receives the same 128 bytes.
 * key names the communicator, so a program may create several (up to 1024 keys per generation, each at most 128
 * bytes). 0 on success, -1 on error: a request plaunch refuses (the 1025th key, say) fails at once, and ETIMEDOUT
 * after PLAUNCH_TIMEOUT_MS without an answer; plaunch_error() says why. Needs libnccl.so.2 on rank 0 only. */
int plaunch_nccl_id(plaunch_t *p, const char *key, unsigned char id[PLAUNCH_NCCL_ID_BYTES]);
/* Waits until every rank of the generation reached the barrier named key. timeout_ms (<= 0: PLAUNCH_TIMEOUT_MS,
 * default 600000) counts from this rank's arrival; the barrier times out for every rank when the timeout of any
 * rank that arrived runs out, and a rank that arrives later at a barrier that timed out is told so at once.
 * 0 when every rank arrived; -1 with errno ETIMEDOUT (timed out), ECANCELED (the generation ended), or another
 * error, plaunch_error() says which. The same key may be used again after the barrier is over. */
int plaunch_barrier(plaunch_t *p, const char *key, int timeout_ms);
/* Reports that this rank reached step (any number that grows: an iteration, a batch, a sample count), for the
 * hang watch (--hang-timeout) and the step-rate straggler check. Writes the number into PLAUNCH_PROGRESS_FILE, one
 * pwrite(2), no message, no wait: cheap enough for every step. Works without plaunch_open (p may be NULL) and from
 * any thread. 0, or -1 with errno (ENOENT when PLAUNCH_PROGRESS_FILE is not set: not under plaunch). */
int plaunch_progress(plaunch_t *p, unsigned long long step);
/* The last error of p, one human-readable sentence ("no error" when none, also for p NULL); never NULL. Valid until
 * the next call on p. */
const char *plaunch_error(const plaunch_t *p);

#ifdef __cplusplus
}
#endif
#endif
