/* plaunch.h: libplaunch, the worker-side API to the local plaunch agent (ranks, NCCL ids, barriers). */
#ifndef PLAUNCH_H
#define PLAUNCH_H

#ifdef __cplusplus
extern "C" {
#endif

#define PLAUNCH_NCCL_ID_BYTES 128

typedef struct plaunch plaunch_t;

/* From the environment the launcher set; NULL + errno on failure. */
plaunch_t *plaunch_open(void);
/* Closes and sets *p to NULL; safe on NULL and twice. */
void plaunch_close(plaunch_t **p);
int plaunch_rank(const plaunch_t *p);
int plaunch_world_size(const plaunch_t *p);
int plaunch_local_rank(const plaunch_t *p);
int plaunch_generation(const plaunch_t *p);
/* Rank 0 of the current generation calls ncclGetUniqueId; every rank receives the same 128 bytes.
 * key names the communicator, so a program may create several (up to 1024 keys per generation). 0 on success,
 * -1 on error: a request plaunch refuses (the 1025th key, say) fails at once, plaunch_error() says why. */
int plaunch_nccl_id(plaunch_t *p, const char *key, unsigned char id[PLAUNCH_NCCL_ID_BYTES]);
/* Waits until every rank of the generation reached the barrier named key. timeout_ms (<= 0: PLAUNCH_TIMEOUT_MS,
 * default 600000) counts from this rank's arrival; the barrier times out for every rank when the timeout of any
 * rank that arrived runs out, and a rank that arrives later at a barrier that timed out is told so at once.
 * 0 when every rank arrived; -1 with errno ETIMEDOUT (timed out), ECANCELED (the generation ended), or another
 * error, plaunch_error() says which. The same key may be used again after the barrier is over. */
int plaunch_barrier(plaunch_t *p, const char *key, int timeout_ms);
/* Last error, human readable; never NULL. */
const char *plaunch_error(const plaunch_t *p);

#ifdef __cplusplus
}
#endif
#endif
