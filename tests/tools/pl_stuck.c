/* pl_stuck: a worker that blocks forever in functions with distinct names, for the black-box tests of
 * `plaunch __stacks` (built with -g and frame pointers; the functions are never inlined). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char s_usage[] =
    "Usage: pl_stuck MODE READY [N]   (READY: a file written once the process is where the test wants it)\n"
    "  named [N]  the main thread blocks in stuck_in_named_function, N more threads in thread_waits_in_named_function\n"
    "  tree       a child blocks in child_stuck_in_named_function, the parent waits for it in\n"
    "             parent_waits_in_named_function; READY holds the child's pid\n"
    "  traced     a child blocks in stuck_in_named_function, already seized by this process (a tracer that never\n"
    "             lets go); READY holds the child's pid\n"
    "  zombie     a child exits at once and is never reaped; READY holds its pid\n"
    "  leaderless [N] N threads block in thread_waits_in_named_function, then the main thread exits (pthread_exit)\n"
    "  vfork      the parent waits in vfork (ptrace cannot stop it) while the child blocks; READY holds the\n"
    "             parent's pid, then the child's\n";

static int s_never[2]; /* a pipe nobody writes to */

/* Writes text to path through a temporary name, so a reader sees all of it or nothing. */
static void s_ready(const char *path, const char *text)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write(fd, text, strlen(text)) < 0 || close(fd) < 0 || rename(tmp, path) < 0) {
        perror(path);
        exit(1);
    }
}

__attribute__((noinline)) void stuck_in_named_function(void)
{
    for (;;)
        pause(); /* STUCK_MAIN_LINE */
}

__attribute__((noinline)) void child_stuck_in_named_function(void)
{
    for (;;)
        pause(); /* STUCK_CHILD_LINE */
}

__attribute__((noinline)) void parent_waits_in_named_function(pid_t child)
{
    while (waitpid(child, NULL, 0) < 0 && errno == EINTR) /* STUCK_PARENT_LINE */
        ;
}

static pthread_mutex_t s_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t s_cond = PTHREAD_COND_INITIALIZER;
static int s_started;

__attribute__((noinline)) void thread_waits_in_named_function(void)
{
    char c;
    pthread_mutex_lock(&s_lock);
    s_started++;
    pthread_cond_signal(&s_cond);
    pthread_mutex_unlock(&s_lock);
    for (;;)
        if (read(s_never[0], &c, 1) <= 0 && errno != EINTR) /* STUCK_THREAD_LINE */
            pause();
}

static void *s_thread(void *arg)
{
    (void)arg;
    thread_waits_in_named_function();
    return NULL;
}

/* Writes READY once the main thread is a zombie (polled, at most 10 s), then blocks like the others. */
static void *s_announce(void *arg)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)getpid());
    for (int i = 0; i < 1000; i++) {
        FILE *f = fopen(path, "r");
        size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
        if (f)
            fclose(f);
        buf[n] = '\0';
        const char *paren = strrchr(buf, ')');
        if (paren && paren[1] == ' ' && paren[2] == 'Z')
            break;
        nanosleep(&(struct timespec){ .tv_nsec = 10000000 }, NULL);
    }
    s_ready(arg, "ready\n");
    thread_waits_in_named_function();
    return NULL;
}

static void s_named(const char *ready, int n, int leaderless)
{
    if (pipe(s_never) < 0) {
        perror("pipe");
        exit(1);
    }
    for (int i = 0; i < n; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, s_thread, NULL) != 0) {
            fprintf(stderr, "pl_stuck: cannot start thread %d\n", i);
            exit(1);
        }
    }
    pthread_mutex_lock(&s_lock);
    while (s_started < n)
        pthread_cond_wait(&s_cond, &s_lock);
    pthread_mutex_unlock(&s_lock);
    if (leaderless) { /* READY once the main thread is gone: another thread writes it */
        pthread_t t;
        if (pthread_create(&t, NULL, s_announce, (void *)ready) != 0)
            exit(1);
        pthread_exit(NULL);
    }
    s_ready(ready, "ready\n");
    stuck_in_named_function();
}

int main(int argc, char **argv)
{
    char buf[64];
    if (argc < 3) {
        fputs(s_usage, stderr);
        return 2;
    }
    const char *mode = argv[1], *ready = argv[2];
    if (strcmp(mode, "named") == 0 || strcmp(mode, "leaderless") == 0) {
        s_named(ready, argc > 3 ? atoi(argv[3]) : 0, strcmp(mode, "leaderless") == 0);
    } else if (strcmp(mode, "tree") == 0 || strcmp(mode, "traced") == 0 || strcmp(mode, "zombie") == 0) {
        pid_t child = fork();
        if (child < 0) {
            perror("fork");
            return 1;
        }
        if (child == 0) {
            if (strcmp(mode, "zombie") == 0)
                _exit(0);
            if (strcmp(mode, "tree") == 0)
                child_stuck_in_named_function();
            stuck_in_named_function();
        }
        if (strcmp(mode, "traced") == 0 && ptrace(PTRACE_SEIZE, child, NULL, NULL) < 0) {
            perror("ptrace");
            return 1;
        }
        snprintf(buf, sizeof buf, "%d\n", (int)child);
        s_ready(ready, buf);
        if (strcmp(mode, "tree") == 0)
            parent_waits_in_named_function(child);
        for (;;)
            pause();
    } else if (strcmp(mode, "vfork") == 0) {
        pid_t parent = getpid();
        pid_t child = vfork();
        if (child == 0) {
            /* Only system calls here: the memory is the parent's until exec or _exit, which never come. */
            snprintf(buf, sizeof buf, "%d %d\n", (int)parent, (int)getpid());
            s_ready(ready, buf);
            for (;;)
                pause();
        }
        return 1;
    } else {
        fputs(s_usage, stderr);
        return 2;
    }
    return 0;
}
