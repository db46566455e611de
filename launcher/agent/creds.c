/* creds: the control plane's credentials and addresses for a multi-node job: which TLS mode (job CA, token,
 * or --insecure), whether this node owns the --master address, and the address it advertises. */
#include "launcher/agent/creds.h"

#include <arpa/inet.h>
#include <limits.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "launcher/sched/sched_detect.h"

int creds_split_master(const char *master, char *host, size_t hostcap, int *port, char *err, size_t errlen)
{
    const char *colon = strrchr(master, ':');
    size_t hlen = (size_t)(colon - master);
    if (master[0] == '[' && hlen > 2 && master[hlen - 1] == ']') {
        snprintf(err, errlen, "--master '%s': IPv6 coordinators are not supported yet; use an IPv4 address", master);
        return -1;
    }
    snprintf(host, hostcap, "%.*s", (int)hlen, master);
    *port = atoi(colon + 1);
    return 0;
}

int creds_is_local_addr(const char *ip)
{
    struct sockaddr_in sa = { .sin_family = AF_INET };
    if (inet_pton(AF_INET, ip, &sa.sin_addr) != 1)
        return 0;
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    int ok = bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0; /* EADDRNOTAVAIL unless an interface has it */
    close(fd);
    return ok;
}

int creds_port_free(const char *ip, int port)
{
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    if (inet_pton(AF_INET, ip, &sa.sin_addr) != 1)
        return 0;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    if (fd < 0)
        return 0;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one); /* as ZeroMQ binds: TIME_WAIT is no owner */
    int ok = bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 && listen(fd, 1) == 0;
    close(fd);
    return ok;
}

static int s_exists(const char *dir, const char *name)
{
    char path[PATH_MAX + 300];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return stat(path, &st) == 0;
}

/* The job CA's directory: --tls-dir, else ~/.plaunch/tls. */
static void s_tls_dir(const struct opts *o, char *dir, size_t cap)
{
    const char *home = getenv("HOME");
    if (o->tls_dir[0])
        snprintf(dir, cap, "%s", o->tls_dir);
    else
        snprintf(dir, cap, "%s/.plaunch/tls", home && *home ? home : "/root");
}

int creds_check_given(const struct opts *o, char *err, size_t errlen)
{
    char dir[PATH_MAX];
    s_tls_dir(o, dir, sizeof dir);
    if (o->insecure || o->token[0] || o->token_file[0] || s_exists(dir, "ca.crt"))
        return 0;
    if (o->sched_kind == SCHED_K8S)
        snprintf(err, errlen, "no credentials for the control plane of this Kubernetes job (%s): give every pod the "
                 "same token, as PLAUNCH_TOKEN from a Secret (env valueFrom secretKeyRef) or --token-file on a "
                 "mounted Secret (defaultMode 0400); see docs/kubernetes.md", o->sched_what);
    else
        snprintf(err, errlen, "no credentials for the control plane of this Slurm step (%s): every node needs the "
                 "same token or job CA. Put 'export PLAUNCH_TOKEN=$(plaunch token)' in the batch script before srun "
                 "(the step passes it to every node), or give --tls-dir DIR on a shared file system (plaunch certs "
                 "init DIR; plaunch certs issue DIR NODE...); see docs/slurm.md", o->sched_what);
    return -1;
}

tls_ctx_t *creds_tls(const struct opts *o, const char *node_addr, const char *hostname, int is_server,
                     const char *retry_hint, int *insecure, char *err, size_t errlen)
{
    unsigned char key[TLS_TOKEN_MAX_BYTES];
    size_t keylen = 0;
    char dir[PATH_MAX];
    *insecure = 0;
    if (o->insecure) {
        *insecure = 1;
        log_warn("--insecure: the control plane is PLAINTEXT and unauthenticated; anyone who reaches the "
                 "coordinator's port can join this job or read its NCCL ids. Use it only on a trusted test network.");
        return NULL;
    }
    if (o->token[0])
        return tls_token_parse_hex(o->token, key, sizeof key, &keylen, err, errlen) < 0
                   ? NULL : tls_ctx_new_psk(is_server, key, keylen, err, errlen);
    if (o->token_file[0])
        return tls_token_read_file(o->token_file, key, sizeof key, &keylen, err, errlen) < 0
                   ? NULL : tls_ctx_new_psk(is_server, key, keylen, err, errlen);
    s_tls_dir(o, dir, sizeof dir);
    if (s_exists(dir, "ca.crt")) {
        char crt[300];
        snprintf(crt, sizeof crt, "%s.crt", node_addr);
        const char *name = s_exists(dir, crt) ? node_addr : hostname;
        log_info("control plane: mutual TLS with the job CA in %s", dir);
        return tls_ctx_new_ca(is_server, dir, name, err, errlen);
    }
    if (!is_server) {
        snprintf(err, errlen, "no credentials for the control plane: give the token the coordinator printed "
                 "(PLAUNCH_TOKEN=... or --token-file FILE), or certificates with --tls-dir DIR (see plaunch certs), "
                 "or --insecure on every node of a trusted test network");
        return NULL;
    }
    char hex[TLS_TOKEN_HEX_LEN + 1];
    if (tls_token_generate(hex, err, errlen) < 0 || tls_token_parse_hex(hex, key, sizeof key, &keylen, err, errlen) < 0)
        return NULL;
    if (o->nnodes > 1) /* a one-node job has no other node to tell, and a secret has no place on a screen */
        fprintf(stderr,
                "plaunch: no credentials given: created a token for this job. On every other node run:\n\n"
                "    PLAUNCH_TOKEN=%s %s\n\n", hex, retry_hint);
    log_info("control plane: a fresh token was created (printed on the coordinator's terminal)");
    return tls_ctx_new_psk(is_server, key, keylen, err, errlen);
}
