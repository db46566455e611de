/* Unit tests for opts_load: defaults, every option and alias, CLI > environment > config file, errors. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "launcher/opts/opts.h"

static char s_dir[] = "/tmp/plaunch-test-opts-XXXXXX";
static char *s_noenv[] = { NULL };
static struct opts s_o;
static char s_err[2048];

static int s_setup(void **state)
{
    return mkdtemp(s_dir) ? 0 : -1;
}

static int s_teardown(void **state)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", s_dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* Writes text to DIR/name and returns the path (static buffer, valid until the next call). */
static char *s_config(const char *name, const char *text)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", s_dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
    return path;
}

/* argv is NULL-terminated, argv[0] the launcher's name. */
static int s_load(char **argv, char **envp)
{
    int argc = 0;
    while (argv[argc])
        argc++;
    s_err[0] = '\0';
    return opts_load(&s_o, argc, argv, envp, s_err, sizeof s_err);
}

static void s_expect_ok(char **argv, char **envp)
{
    int rc = s_load(argv, envp);
    if (rc != 0)
        fail_msg("opts_load returned %d: %s", rc, s_err);
}

/* Expects -1 and a message containing every NULL-terminated needle. */
static void s_expect_fail(char **argv, char **envp, ...)
{
    int rc = s_load(argv, envp);
    if (rc != -1)
        fail_msg("opts_load returned %d, want -1 (argv[1] '%s')", rc, argv[1] ? argv[1] : "");
    va_list ap;
    va_start(ap, envp);
    for (const char *needle; (needle = va_arg(ap, const char *)) != NULL;)
        if (!strstr(s_err, needle))
            fail_msg("message '%s' does not contain '%s'", s_err, needle);
    va_end(ap);
}

#define ARGV(...) ((char *[]){ "plaunch", __VA_ARGS__, NULL })
#define ENVP(...) ((char *[]){ __VA_ARGS__, NULL })

static void test_defaults(void **state)
{
    s_expect_ok(ARGV("prog"), s_noenv);
    assert_string_equal(s_o.log_dir, "log");
    assert_string_equal(s_o.tee, "first");
    assert_true(s_o.grace == 10.0);
    assert_int_equal(s_o.max_restarts, 0);
    assert_string_equal(s_o.gpus, "");
    assert_int_equal(s_o.nproc, 0);
    assert_string_equal(s_o.job_id, "");
    assert_string_equal(s_o.host, "");
    assert_string_equal(s_o.config, "");
    assert_int_equal(s_o.quiet, 0);
    assert_int_equal(s_o.prog_argc, 1);
    assert_string_equal(s_o.prog_argv[0], "prog");
    /* NULL envp is an empty environment. */
    s_expect_ok(ARGV("prog"), NULL);
}

static void test_each_option(void **state)
{
    s_expect_ok(ARGV("--gpus", "0,1", "--nproc-per-node", "4", "--log-dir", "/tmp/l", "--job-id", "j-1.x",
                     "--tee", "all", "--max-restarts", "2", "--grace", "2.5", "--host", "10.0.0.1", "--quiet",
                     "prog"),
                s_noenv);
    assert_string_equal(s_o.gpus, "0,1");
    assert_int_equal(s_o.nproc, 4);
    assert_string_equal(s_o.log_dir, "/tmp/l");
    assert_string_equal(s_o.job_id, "j-1.x");
    assert_string_equal(s_o.tee, "all");
    assert_int_equal(s_o.max_restarts, 2);
    assert_true(s_o.grace == 2.5);
    assert_string_equal(s_o.host, "10.0.0.1");
    assert_int_equal(s_o.quiet, 1);
    assert_int_equal(s_o.prog_argc, 1);
}

static void test_aliases_and_equals_form(void **state)
{
    s_expect_ok(ARGV("--devices", "2-3", "--nproc_per_node", "3", "--log_dir", "d", "--rdzv-id", "r",
                     "--max_restart", "5", "prog"),
                s_noenv);
    assert_string_equal(s_o.gpus, "2-3");
    assert_int_equal(s_o.nproc, 3);
    assert_string_equal(s_o.log_dir, "d");
    assert_string_equal(s_o.job_id, "r");
    assert_int_equal(s_o.max_restarts, 5);

    s_expect_ok(ARGV("--gpus=all", "--nproc_per_node=7", "--log-dir=x=y", "--max_restarts=6", "--tee=none",
                     "--job_id=abc", "--grace=0", "prog"),
                s_noenv);
    assert_string_equal(s_o.gpus, "all");
    assert_int_equal(s_o.nproc, 7);
    assert_string_equal(s_o.log_dir, "x=y"); /* only the first '=' splits */
    assert_int_equal(s_o.max_restarts, 6);
    assert_string_equal(s_o.tee, "none");
    assert_string_equal(s_o.job_id, "abc");
    assert_true(s_o.grace == 0.0);
}

static void test_program_args_stop_parsing(void **state)
{
    s_expect_ok(ARGV("--nproc-per-node", "2", "python3", "train.py", "--gpus", "9", "--help"), s_noenv);
    assert_int_equal(s_o.nproc, 2);
    assert_string_equal(s_o.gpus, "");
    assert_int_equal(s_o.prog_argc, 5);
    assert_string_equal(s_o.prog_argv[0], "python3");
    assert_string_equal(s_o.prog_argv[4], "--help");

    s_expect_ok(ARGV("--gpus", "0", "--", "--weird", "-x"), s_noenv);
    assert_string_equal(s_o.gpus, "0");
    assert_int_equal(s_o.prog_argc, 2);
    assert_string_equal(s_o.prog_argv[0], "--weird");

    s_expect_ok(ARGV("-", "a"), s_noenv); /* a lone '-' is a program name */
    assert_string_equal(s_o.prog_argv[0], "-");
}

static void test_precedence(void **state)
{
    char *cfg = s_config("p.ini", "; comment\n[plaunch]\ngpus = 0\nnproc_per_node = 2\nlog-dir = fromfile\n"
                                        "max_restarts = 1\ngrace = 3\n");
    char cfgarg[300];
    snprintf(cfgarg, sizeof cfgarg, "PLAUNCH_CONFIG=%s", cfg);

    /* File only. */
    s_expect_ok(ARGV("prog"), ENVP(cfgarg));
    assert_string_equal(s_o.gpus, "0");
    assert_int_equal(s_o.nproc, 2);
    assert_string_equal(s_o.log_dir, "fromfile");
    assert_int_equal(s_o.max_restarts, 1);
    assert_true(s_o.grace == 3.0);
    assert_string_equal(s_o.config, cfg);
    assert_non_null(strstr(s_o.origin_gpus, cfg));

    /* Environment beats the file; untouched keys keep the file's value. */
    s_expect_ok(ARGV("prog"), ENVP(cfgarg, "PLAUNCH_GPUS=1", "PLAUNCH_NPROC_PER_NODE=5", "PLAUNCH_LOG_DIR=",
                                   "PLAUNCH_MAX_RESTARTS=4", "UNRELATED=1"));
    assert_string_equal(s_o.gpus, "1");
    assert_int_equal(s_o.nproc, 5);
    assert_string_equal(s_o.log_dir, "fromfile"); /* an empty variable counts as unset */
    assert_int_equal(s_o.max_restarts, 4);
    assert_true(s_o.grace == 3.0);
    assert_string_equal(s_o.origin_gpus, "environment PLAUNCH_GPUS");

    /* The command line beats both, and can name the config file itself. */
    s_expect_ok(ARGV("--config", cfg, "--gpus", "2", "--max-restarts", "9", "prog"),
                ENVP("PLAUNCH_GPUS=1", "PLAUNCH_MAX_RESTARTS=4", "PLAUNCH_GRACE=7"));
    assert_string_equal(s_o.gpus, "2");
    assert_int_equal(s_o.max_restarts, 9);
    assert_int_equal(s_o.nproc, 2);
    assert_true(s_o.grace == 7.0);
    assert_string_equal(s_o.origin_gpus, "--gpus");
    s_expect_ok(ARGV("--config", cfg, "prog"), ENVP("PLAUNCH_CONFIG=/nonexistent/x.ini"));
    assert_string_equal(s_o.config, cfg);
}

static void test_config_without_section_and_aliases(void **state)
{
    char *cfg = s_config("nosect.ini", "devices = 3\nmax_restart = 8\nquiet = yes\nconsole_ranks = 0,2\n");
    s_expect_ok(ARGV("--config", cfg, "prog"), s_noenv);
    assert_string_equal(s_o.gpus, "3");
    assert_int_equal(s_o.max_restarts, 8);
    assert_int_equal(s_o.quiet, 1);
    assert_string_equal(s_o.tee, "0,2");
}

static void test_config_errors(void **state)
{
    char *cfg = s_config("badkey.ini", "[plaunch]\ngpus = 0\n\nbogus = 1\n");
    s_expect_fail(ARGV("--config", cfg, "prog"), s_noenv, cfg, ":4:", "unknown key 'bogus'", NULL);

    cfg = s_config("badsect.ini", "[plaunch]\ngpus = 0\n[other]\nnproc = 2\n");
    s_expect_fail(ARGV("--config", cfg, "prog"), s_noenv, ":4:", "unknown section [other]", NULL);

    cfg = s_config("badval.ini", "[plaunch]\n\ngpus = 0,0\n");
    s_expect_fail(ARGV("--config", cfg, "prog"), s_noenv, ":3:", "'0,0'", "listed twice", NULL);

    cfg = s_config("nested.ini", "[plaunch]\nconfig = other.ini\n");
    s_expect_fail(ARGV("--config", cfg, "prog"), s_noenv, "unknown key 'config'", NULL);

    cfg = s_config("syntax.ini", "[plaunch]\ngpus 0\n");
    s_expect_fail(ARGV("--config", cfg, "prog"), s_noenv, cfg, "line 2", NULL);

    s_expect_fail(ARGV("--config", "/nonexistent/plaunch.ini", "prog"), s_noenv, "'/nonexistent/plaunch.ini'",
                  "No such file", NULL);
    s_expect_fail(ARGV("prog"), ENVP("PLAUNCH_CONFIG=/nonexistent/x.ini"), "'/nonexistent/x.ini'", NULL);
}

/* BUG (launcher/opts.c s_load_config): a directory given as --config opens with fopen("r") and its read error
 * (EISDIR) is never checked, so it is taken as an empty config file; expected -1 naming the path. */
static void test_config_directory_is_unreadable(void **state)
{
    s_expect_fail(ARGV("--config", s_dir, "prog"), s_noenv, s_dir, NULL);
}

/* BUG (launcher/opts.c s_ini_reader/s_load_config): Debian's inih reads at most 200 bytes per call, so a longer
 * line reaches the parser as two "lines"; the error then names the line after the long one ("line 3" for a
 * 300-character comment on line 2 followed by a valid line 3). Expected: accepted, or an error naming line 2. */
static void test_config_long_line_named(void **state)
{
    char text[512], *p = text;
    p += sprintf(p, "[plaunch]\n# ");
    memset(p, 'x', 300);
    sprintf(p + 300, "\ngpus = 0\n");
    char *cfg = s_config("long.ini", text);
    if (s_load(ARGV("--config", cfg, "prog"), s_noenv) == -1 && !strstr(s_err, "line 2") && !strstr(s_err, ":2:"))
        fail_msg("a 300-character comment on line 2 gave: %s", s_err);
}

static void test_cli_errors(void **state)
{
    s_expect_fail(ARGV("--bogus", "prog"), s_noenv, "unknown option '--bogus'", NULL);
    s_expect_fail(ARGV("--bogus=3", "prog"), s_noenv, "unknown option '--bogus'", NULL);
    s_expect_fail(ARGV("-g", "0", "prog"), s_noenv, "'-g'", NULL);
    s_expect_fail(ARGV("--gpus", "0,0", "prog"), s_noenv, "--gpus '0,0'", "GPU 0 is listed twice", NULL);
    s_expect_fail(ARGV("--gpus", "0-", "prog"), s_noenv, "'0-'", NULL);
    s_expect_fail(ARGV("--gpus=", "prog"), s_noenv, "empty GPU list", NULL);
    s_expect_fail(ARGV("--nproc-per-node", "0", "prog"), s_noenv, "'0'", "number of workers", NULL);
    s_expect_fail(ARGV("--nproc-per-node", "-2", "prog"), s_noenv, "'-2'", NULL);
    s_expect_fail(ARGV("--nproc-per-node", "four", "prog"), s_noenv, "'four'", NULL);
    s_expect_fail(ARGV("--nproc-per-node", "4x", "prog"), s_noenv, "'4x'", NULL);
    s_expect_fail(ARGV("--nproc-per-node", "1025", "prog"), s_noenv, "'1025'", NULL);
    s_expect_fail(ARGV("--max-restarts", "-1", "prog"), s_noenv, "'-1'", NULL);
    s_expect_fail(ARGV("--grace", "-1", "prog"), s_noenv, "'-1'", "seconds", NULL);
    s_expect_fail(ARGV("--grace", "nan", "prog"), s_noenv, "'nan'", NULL);
    s_expect_fail(ARGV("--log-dir", "", "prog"), s_noenv, "empty log directory", NULL);
    s_expect_fail(ARGV("--job-id", "a b", "prog"), s_noenv, "'a b'", NULL);
    s_expect_fail(ARGV("--tee", "x", "prog"), s_noenv, "--tee 'x'", NULL);
    s_expect_fail(ARGV("--host", "a,b", "prog"), s_noenv, "'a,b'", NULL);
    s_expect_fail(ARGV("--quiet=1", "prog"), s_noenv, "takes no value", NULL);
}

static void test_missing_program_and_value(void **state)
{
    s_expect_fail(ARGV("--gpus", "0"), s_noenv, "no program given", NULL);
    s_expect_fail(ARGV("--gpus", "0", "--"), s_noenv, "no program given", NULL);
    s_expect_fail((char *[]){ "plaunch", NULL }, s_noenv, "no program given", NULL);
    s_expect_fail(ARGV("--nproc-per-node"), s_noenv, "'--nproc-per-node' needs a value", NULL);
    s_expect_fail(ARGV("--log-dir"), s_noenv, "'--log-dir' needs a value", NULL);
}

static void test_env_errors_name_variable(void **state)
{
    s_expect_fail(ARGV("prog"), ENVP("PLAUNCH_GPUS=0,0"), "environment PLAUNCH_GPUS '0,0'", NULL);
    s_expect_fail(ARGV("prog"), ENVP("PLAUNCH_NPROC_PER_NODE=0"), "environment PLAUNCH_NPROC_PER_NODE '0'", NULL);
    s_expect_fail(ARGV("prog"), ENVP("PLAUNCH_QUIET=maybe"), "'maybe'", NULL);
}

/* Runs opts_load with stdout sent to a file; returns the return code and leaves the output in out. */
static int s_load_capturing(char **argv, char *out, size_t cap)
{
    char path[300];
    snprintf(path, sizeof path, "%s/stdout", s_dir);
    fflush(stdout);
    int saved = dup(STDOUT_FILENO), fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    assert_true(saved >= 0 && fd >= 0);
    dup2(fd, STDOUT_FILENO);
    int rc = s_load(argv, s_noenv);
    fflush(stdout);
    dup2(saved, STDOUT_FILENO);
    close(saved);
    ssize_t n = pread(fd, out, cap - 1, 0);
    out[n > 0 ? n : 0] = '\0';
    close(fd);
    return rc;
}

/* torchrun's --master-addr HOST[:PORT] / --master-port, in both spellings, fold into --master. */
static void test_torchrun_master_spellings(void **state)
{
    s_expect_ok(ARGV("--nnodes", "2", "--master-addr", "10.0.0.1", "--master-port", "7000", "prog"), s_noenv);
    assert_string_equal(s_o.master, "10.0.0.1:7000");
    s_expect_ok(ARGV("--nnodes", "2", "--master_port=7001", "--master_addr", "10.0.0.1", "prog"), s_noenv);
    assert_string_equal(s_o.master, "10.0.0.1:7001");
    s_expect_ok(ARGV("--nnodes", "2", "--master-addr", "10.0.0.1:7002", "prog"), s_noenv);
    assert_string_equal(s_o.master, "10.0.0.1:7002");
    s_expect_ok(ARGV("--nnodes", "2", "--master-addr", "node0", "prog"), s_noenv);
    assert_string_equal(s_o.master, "node0:6170");
    s_expect_ok(ARGV("--nnodes", "2", "prog"), ENVP("PLAUNCH_MASTER_ADDR=node0", "PLAUNCH_MASTER_PORT=7003"));
    assert_string_equal(s_o.master, "node0:7003");

    s_expect_fail(ARGV("--master", "a:1", "--master-addr", "b", "prog"), s_noenv, "both name the coordinator", NULL);
    s_expect_fail(ARGV("--master-addr", "a:1", "--master-port", "2", "prog"), s_noenv, "different ports", NULL);
    /* one node: torchrun's static rendezvous gives the workers these as MASTER_ADDR/MASTER_PORT */
    s_expect_ok(ARGV("--master-port", "7000", "prog"), s_noenv);
    assert_int_equal(s_o.worker_master_port, 7000);
    assert_string_equal(s_o.master, "");
    s_expect_ok(ARGV("--master-addr", "localhost", "prog"), s_noenv);
    assert_string_equal(s_o.worker_master_addr, "localhost");
    assert_int_equal(s_o.worker_master_port, 29500);
    assert_string_equal(s_o.master, "");
    s_expect_fail(ARGV("--nnodes", "2", "--master-port", "7000", "prog"), s_noenv, "--master-port 7000 with --nnodes 2 "
                  "needs --master-addr", NULL);
    s_expect_fail(ARGV("--master", "a:1", "--master-port", "7000", "prog"), s_noenv, "--master HOST:PORT", NULL);
    s_expect_fail(ARGV("--master-addr", "a:b", "prog"), s_noenv, "--master-addr 'a:b'", "HOST:PORT", NULL);
    s_expect_fail(ARGV("--master-addr", "fe80::1", "prog"), s_noenv, "--master-addr 'fe80::1'", NULL);
    s_expect_fail(ARGV("--master-port", "0", "--master-addr", "a", "prog"), s_noenv, "--master-port '0'", NULL);
    s_expect_fail(ARGV("--nnodes", "2", "prog"), s_noenv, "--master-addr HOST", NULL);
}

/* The coordinator elected through etcd: Paddle's --master etcd://, torchrun's etcd backends, TLS files. */
static void test_etcd_spellings(void **state)
{
    s_expect_ok(ARGV("--nnodes", "2", "--master", "etcd://10.0.0.5:2379,10.0.0.6:2379", "prog"), s_noenv);
    assert_string_equal(s_o.master, "etcd://10.0.0.5:2379,10.0.0.6:2379");
    assert_true(opts_is_etcd(&s_o));
    assert_string_equal(s_o.job_id, "default"); /* Paddle's --job_id default: every node names the same keys */
    s_expect_ok(ARGV("--nnodes", "2", "--rdzv-backend", "etcd-v2", "--rdzv-endpoint", "10.0.0.5", "prog"), s_noenv);
    assert_string_equal(s_o.master, "etcd://10.0.0.5:2379");
    assert_string_equal(s_o.job_id, "none"); /* torchrun's --rdzv-id default */
    s_expect_ok(ARGV("--nnodes", "2", "--rdzv_backend", "etcd", "--rdzv_endpoint", "h:2400", "--rdzv_id", "j",
                     "--rdzv_conf", "protocol=https,cacert=/dev/null,join_timeout=30", "prog"), s_noenv);
    assert_string_equal(s_o.master, "etcd://https://h:2400");
    assert_string_equal(s_o.etcd_cacert, "/dev/null");
    assert_string_equal(s_o.job_id, "j");
    assert_true(s_o.rdzv_timeout == 30.0);

    s_expect_fail(ARGV("--nnodes", "2", "--master", "etcd://nohost", "prog"), s_noenv, "etcd://HOST:PORT", NULL);
    s_expect_fail(ARGV("--nnodes", "2", "--rdzv-backend", "etcd", "prog"), s_noenv, "needs --rdzv-endpoint", NULL);
    s_expect_fail(ARGV("--nnodes", "2", "--rdzv-backend", "etcd", "--rdzv-endpoint", "h", "--rdzv-conf",
                       "last_call_timeout=5", "prog"), s_noenv, "last_call_timeout", "drop it", NULL);
    s_expect_fail(ARGV("--nnodes", "2", "--rdzv-backend", "zk", "prog"), s_noenv, "no such backend", NULL);
    s_expect_fail(ARGV("--nnodes", "2", "--master", "a:1", "--etcd-cacert", "/dev/null", "prog"), s_noenv,
                  "for an etcd rendezvous", NULL);
    s_expect_fail(ARGV("--nnodes", "2", "--master", "etcd://h:1", "--etcd-cert", "/dev/null", "prog"), s_noenv,
                  "go together", NULL);
    s_expect_fail(ARGV("--nnodes", "2", "--master", "etcd://h:1", "--etcd-cacert", "/nonexistent/ca.pem", "prog"),
                  s_noenv, "--etcd-cacert '/nonexistent/ca.pem' cannot be read", NULL);
}

/* torchrun's --standalone is plaunch's one-node job; asking for more nodes with it is a contradiction. */
static void test_standalone(void **state)
{
    s_expect_ok(ARGV("--standalone", "--nproc-per-node", "4", "prog"), s_noenv);
    assert_int_equal(s_o.standalone, 1);
    assert_int_equal(s_o.nnodes, 1);
    assert_string_equal(s_o.master, "");
    s_expect_fail(ARGV("--standalone", "--nnodes", "2", "--master", "a:1", "prog"), s_noenv, "--standalone",
                  "--nnodes", NULL);
    s_expect_fail(ARGV("--standalone", "--master-addr", "a", "prog"), s_noenv, "--standalone", "--master", NULL);
    s_expect_fail(ARGV("--standalone", "--ips", "127.0.0.1,198.18.255.254", "prog"), s_noenv, "--ips", NULL);
    s_expect_fail(ARGV("--standalone=1", "prog"), s_noenv, "takes no value", NULL);
}

/* Paddle's --ips: node count, the coordinator on the first address, this node's rank by its own address (127.0.0.1
 * is this host's; 198.18.255.x are not); --rank is the node rank. */
static void test_paddle_ips_and_rank(void **state)
{
    s_expect_ok(ARGV("--ips", "127.0.0.1,198.18.255.254", "prog"), s_noenv);
    assert_int_equal(s_o.nnodes, 2);
    assert_int_equal(s_o.nnodes_min, 2);
    assert_string_equal(s_o.master, "127.0.0.1:6170");
    assert_int_equal(s_o.node_rank, 0);
    assert_string_equal(s_o.host, "127.0.0.1");
    s_expect_ok(ARGV("--ips", "198.18.255.254,127.0.0.1", "--master_port", "7000", "--nnodes", "2", "prog"),
                s_noenv);
    assert_string_equal(s_o.master, "198.18.255.254:7000");
    assert_int_equal(s_o.node_rank, 1);
    s_expect_ok(ARGV("--ips", "198.18.255.253,198.18.255.254", "--rank", "1", "prog"), s_noenv);
    assert_int_equal(s_o.node_rank, 1);
    assert_string_equal(s_o.host, ""); /* not an address of this host: found by route as usual */
    s_expect_ok(ARGV("--ips", "127.0.0.1", "prog"), s_noenv); /* one node: no coordinator to reach */
    assert_int_equal(s_o.nnodes, 1);
    assert_string_equal(s_o.master, "");
    s_expect_ok(ARGV("--rank", "1", "--nnodes", "2", "--master", "a:1", "prog"), s_noenv);
    assert_int_equal(s_o.node_rank, 1);

    s_expect_fail(ARGV("--ips", "198.18.255.253,198.18.255.254", "prog"), s_noenv,
                  "none of these addresses belongs to this host", "127.0.0.1", "--rank R", NULL);
    s_expect_fail(ARGV("--ips", "127.0.0.1,127.0.0.1", "prog"), s_noenv, "127.0.0.1 is listed twice", NULL);
    s_expect_fail(ARGV("--ips", "127.0.0.1,node1", "prog"), s_noenv, "entry 2 ('node1') is not an IPv4", NULL);
    s_expect_fail(ARGV("--ips", "127.0.0.1,", "prog"), s_noenv, "entry 2 ('') is not an IPv4", NULL);
    s_expect_fail(ARGV("--ips", "127.0.0.1,198.18.255.254", "--nnodes", "3", "prog"), s_noenv,
                  "--nnodes 3 disagrees with --ips, which lists 2 nodes", NULL);
    s_expect_fail(ARGV("--ips", "127.0.0.1,198.18.255.254", "--master", "a:1", "prog"), s_noenv, "drop --master",
                  NULL);
    s_expect_fail(ARGV("--ips", "127.0.0.1,198.18.255.254", "--rank", "2", "prog"), s_noenv,
                  "--node-rank 2 is outside 0..1", NULL);
    s_expect_fail(ARGV("prog"), ENVP("PLAUNCH_IPS=1.2.3"), "environment PLAUNCH_IPS '1.2.3'", NULL);
}

/* --node-hosts: every node's host by rank (a Slurm host list), --nnodes of them, a fixed size only; --ips fills it. */
static void test_node_hosts(void **state)
{
    char host[64], err[256];
    s_expect_ok(ARGV("--nnodes", "9", "--master", "a:1", "--node-rank", "3", "--node-hosts", "gpu[01-09]", "prog"),
                s_noenv);
    assert_int_equal(opts_node_host(&s_o, 3, host, sizeof host, err, sizeof err), 0);
    assert_string_equal(host, "gpu04");
    assert_int_equal(opts_node_host(&s_o, 9, host, sizeof host, err, sizeof err), -1);
    s_expect_ok(ARGV("--ips", "127.0.0.1,198.18.255.254", "prog"), s_noenv);
    assert_string_equal(s_o.node_hosts, "127.0.0.1,198.18.255.254");
    s_expect_fail(ARGV("--nnodes", "9", "--master", "a:1", "--node-hosts", "gpu[01-08]", "prog"), s_noenv,
                  "--node-hosts names 8 hosts, but --nnodes is 9", NULL);
    s_expect_fail(ARGV("--nnodes", "2:9", "--master", "a:1", "--node-hosts", "gpu[01-09]", "prog"), s_noenv,
                  "--node-hosts cannot be combined with an elastic --nnodes 2:9", NULL);
    s_expect_fail(ARGV("--node-hosts", "gpu[3-1]", "prog"), s_noenv, "--node-hosts", "range 3-1 goes down", NULL);
}

static void test_help_and_version(void **state)
{
    static char out[16384];
    assert_int_equal(s_load_capturing(ARGV("--help"), out, sizeof out), 1);
    assert_non_null(strstr(out, "Usage:"));
    assert_non_null(strstr(out, "--nproc-per-node"));
    assert_int_equal(s_load_capturing(ARGV("--gpus", "0", "-h", "prog"), out, sizeof out), 1);
    assert_int_equal(s_load_capturing(ARGV("--version"), out, sizeof out), 1);
    assert_non_null(strstr(out, "plaunch " PLAUNCH_VERSION));
}

/* --spares, --max-no-progress-restarts, --no-progress-time: defaults, the three sources, refusals. */
static void test_resilience(void **state)
{
    s_expect_ok(ARGV("prog"), s_noenv);
    assert_int_equal(s_o.spares, 0);
    assert_int_equal(s_o.max_no_progress, 3);
    assert_true(s_o.no_progress_time == 60.0);
    char *cfg = s_config("spares.ini", "[plaunch]\nspares = 2\nmax_no_progress_restarts = 5\n");
    s_expect_ok(ARGV("--config", cfg, "--nnodes", "4", "--master", "h:1", "prog"),
                ENVP("PLAUNCH_NO_PROGRESS_TIME=2.5"));
    assert_int_equal(s_o.spares, 2);
    assert_int_equal(s_o.max_no_progress, 5);
    assert_true(s_o.no_progress_time == 2.5);
    s_expect_ok(ARGV("--nnodes", "2", "--master", "h:1", "prog"), ENVP("PLAUNCH_SPARES=1"));
    assert_int_equal(s_o.spares, 1);
    /* a spare's own --node-rank: N..N+S-1 */
    s_expect_ok(ARGV("--nnodes", "2", "--spares", "1", "--node-rank", "2", "--master", "h:1", "prog"), s_noenv);
    s_expect_fail(ARGV("--nnodes", "2", "--spares", "1", "--node-rank", "3", "--master", "h:1", "prog"), s_noenv,
                  "--node-rank 3 is outside 0..2", NULL);
    s_expect_fail(ARGV("--spares", "1", "prog"), s_noenv, "--spares 1 needs a job of several nodes", NULL);
    s_expect_fail(ARGV("--spares", "-1", "prog"), s_noenv, "--spares", NULL);
    s_expect_fail(ARGV("--max-no-progress-restarts", "x", "prog"), s_noenv, "--max-no-progress-restarts", NULL);
    s_expect_fail(ARGV("--no-progress-time", "-1", "prog"), s_noenv, "--no-progress-time", NULL);
    s_expect_ok(ARGV("--no-progress-time", "0", "prog"), s_noenv); /* time never says "no progress": steps only */
    s_expect_ok(ARGV("--max-no-progress-restarts", "0", "prog"), s_noenv);
    assert_int_equal(s_o.max_no_progress, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_etcd_spellings),
        cmocka_unit_test(test_each_option),
        cmocka_unit_test(test_aliases_and_equals_form),
        cmocka_unit_test(test_program_args_stop_parsing),
        cmocka_unit_test(test_precedence),
        cmocka_unit_test(test_config_without_section_and_aliases),
        cmocka_unit_test(test_config_errors),
        cmocka_unit_test(test_config_directory_is_unreadable),
        cmocka_unit_test(test_config_long_line_named),
        cmocka_unit_test(test_cli_errors),
        cmocka_unit_test(test_missing_program_and_value),
        cmocka_unit_test(test_env_errors_name_variable),
        cmocka_unit_test(test_torchrun_master_spellings),
        cmocka_unit_test(test_standalone),
        cmocka_unit_test(test_paddle_ips_and_rank),
        cmocka_unit_test(test_node_hosts),
        cmocka_unit_test(test_help_and_version),
        cmocka_unit_test(test_resilience),
    };
    return cmocka_run_group_tests(tests, s_setup, s_teardown);
}
