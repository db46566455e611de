/* loop: the one event loop of a process: file descriptors and ZeroMQ sockets through zmq_poll, plus
 * one-shot deadlines. Handlers run on the loop's thread; a handler returning -1 stops the loop. */
#ifndef PLAUNCH_LOOP_H
#define PLAUNCH_LOOP_H

#include <stdint.h>
#include <zmq.h>

typedef struct loop loop_t;
/* fd is the descriptor (or -1 for a socket item), sock the ZeroMQ socket (or NULL). */
typedef int (*loop_io_fn)(loop_t *loop, int fd, void *sock, short revents, void *arg);
typedef int (*loop_timer_fn)(loop_t *loop, int timer_id, void *arg);

loop_t *loop_new(void);
void loop_destroy(loop_t **loop);

/* Watches fd (events: ZMQ_POLLIN / ZMQ_POLLOUT); one registration per fd. 0, or -1 with errno. */
int loop_add_fd(loop_t *loop, int fd, short events, loop_io_fn fn, void *arg);
int loop_add_socket(loop_t *loop, void *sock, short events, loop_io_fn fn, void *arg);
/* Removing is safe from inside any handler; 0, or -1 (ENOENT) when not registered. */
int loop_remove_fd(loop_t *loop, int fd);
int loop_remove_socket(loop_t *loop, void *sock);

/* Monotonic clock in nanoseconds, the time base of deadlines. */
uint64_t loop_now_ns(void);
/* Calls fn once at deadline (monotonic ns); returns a timer id > 0, or -1 with errno. */
int loop_timer_at(loop_t *loop, uint64_t deadline_ns, loop_timer_fn fn, void *arg);
int loop_timer_after_ms(loop_t *loop, int64_t ms, loop_timer_fn fn, void *arg);
/* Cancels a pending timer; ids of fired or cancelled timers are ignored. */
void loop_timer_cancel(loop_t *loop, int timer_id);

/* Runs until loop_stop or a handler returns -1; returns 0 after loop_stop, -1 on a handler error or a
 * poll failure (errno set). */
int loop_run(loop_t *loop);
void loop_stop(loop_t *loop);

#endif
