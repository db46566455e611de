/* util: whole writes to a descriptor, a lookup in an envp array, wait status to exit code, small text files. */
#include "common/util.h"

#include <sys/wait.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

int util_write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

const char *util_env_get(char **envp, const char *name)
{
    size_t len = strlen(name);
    for (char **e = envp; e && *e; e++)
        if (strncmp(*e, name, len) == 0 && (*e)[len] == '=')
            return *e + len + 1;
    return NULL;
}

int util_exit_code(int wait_status)
{
    if (WIFEXITED(wait_status))
        return WEXITSTATUS(wait_status);
    if (WIFSIGNALED(wait_status))
        return 128 + WTERMSIG(wait_status);
    return 125;
}

ssize_t util_read_small(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || cap < 2) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    ssize_t n = read(fd, buf, cap - 1);
    close(fd);
    while (n > 0 && isspace((unsigned char)buf[n - 1]))
        n--;
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    return n;
}
