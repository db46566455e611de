/* test_certs: the job CA and node certificates made by certs.c and `plaunch certs`, checked with real OpenSSL. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/tls/certs.h"
#include "common/secfile.h"
#include "tests/unit/test_util.h"

#include <openssl/x509v3.h>

int cmd_certs(int argc, char **argv);

static char s_err[1024];

struct fix {
    char *tmp;
    char dir[512];
    char path[600];
};

static int s_setup(void **state)
{
    struct fix *f = calloc(1, sizeof *f);
    f->tmp = tu_mkdtemp("certs");
    /* A directory that does not exist yet: init must create it 0700. */
    snprintf(f->dir, sizeof f->dir, "%s/pki", f->tmp);
    *state = f;
    return 0;
}

static int s_teardown(void **state)
{
    struct fix *f = *state;
    tu_rmtree(f->tmp);
    free(f);
    return 0;
}

static const char *s_path(struct fix *f, const char *base)
{
    snprintf(f->path, sizeof f->path, "%s/%s", f->dir, base);
    return f->path;
}

static X509 *s_cert(struct fix *f, const char *base)
{
    X509 *x = certs_load_cert(s_path(f, base), s_err, sizeof s_err);
    assert_non_null(x);
    return x;
}

/* Days from now to t (negative: in the past). */
static int s_days_from_now(const ASN1_TIME *t)
{
    int days = 0, secs = 0;
    assert_true(ASN1_TIME_diff(&days, &secs, NULL, t));
    return days;
}

/* Verifies dir/base.crt against dir/ca.crt; returns the X509_V_ result. */
static int s_verify(struct fix *f, const char *base)
{
    X509 *ca = s_cert(f, "ca.crt"), *x = s_cert(f, base);
    X509_STORE *store = X509_STORE_new();
    X509_STORE_CTX *vctx = X509_STORE_CTX_new();
    int rc;
    assert_true(X509_STORE_add_cert(store, ca));
    assert_true(X509_STORE_CTX_init(vctx, store, x, NULL));
    X509_STORE_CTX_set_purpose(vctx, X509_PURPOSE_SSL_CLIENT);
    rc = X509_verify_cert(vctx) == 1 ? X509_V_OK : X509_STORE_CTX_get_error(vctx);
    X509_STORE_CTX_free(vctx);
    X509_STORE_free(store);
    X509_free(ca);
    X509_free(x);
    return rc;
}

static void test_init_creates_private_ca(void **state)
{
    struct fix *f = *state;
    char group[64];
    size_t glen = 0;
    assert_int_equal(certs_init_ca(f->dir, NULL, s_err, sizeof s_err), 0);
    assert_int_equal(tu_mode(f->dir), 0700);
    assert_int_equal(tu_mode(s_path(f, "ca.key")), 0600);
    assert_int_equal(tu_mode(s_path(f, "ca.crt")), 0644);

    X509 *ca = s_cert(f, "ca.crt");
    EVP_PKEY *key = certs_load_key(s_path(f, "ca.key"), s_err, sizeof s_err);
    assert_non_null(key);
    assert_true(X509_check_private_key(ca, key));
    assert_int_equal(X509_verify(ca, key), 1); /* self-signed */
    assert_true(X509_get_extension_flags(ca) & EXFLAG_CA);
    assert_true(X509_get_key_usage(ca) & KU_KEY_CERT_SIGN);
    assert_true(EVP_PKEY_get_group_name(key, group, sizeof group, &glen));
    assert_string_equal(group, "prime256v1");
    assert_in_range(s_days_from_now(X509_get0_notAfter(ca)), 3649, 3650);
    assert_true(s_days_from_now(X509_get0_notBefore(ca)) <= 0);
    X509_free(ca);
    EVP_PKEY_free(key);
}

static void test_init_refuses_to_overwrite_without_force(void **state)
{
    struct fix *f = *state;
    char *before;
    certs_opts_t force = CERTS_OPTS_ZERO;
    assert_int_equal(certs_init_ca(f->dir, NULL, s_err, sizeof s_err), 0);
    before = strdup(tu_slurp(s_path(f, "ca.crt")));

    assert_int_equal(certs_init_ca(f->dir, NULL, s_err, sizeof s_err), -1);
    assert_non_null(strstr(s_err, "ca.key already exists"));
    assert_non_null(strstr(s_err, "--force"));
    assert_string_equal(tu_slurp(s_path(f, "ca.crt")), before);

    force.force = 1;
    assert_int_equal(certs_init_ca(f->dir, &force, s_err, sizeof s_err), 0);
    assert_string_not_equal(tu_slurp(s_path(f, "ca.crt")), before);
    assert_int_equal(tu_mode(s_path(f, "ca.key")), 0600);
    free(before);
}

static void test_issue_node_certificate(void **state)
{
    struct fix *f = *state;
    const char *ips[] = { "10.0.0.7", "fd00::7" };
    certs_opts_t opts = CERTS_OPTS_ZERO;
    opts.ips = ips;
    opts.nips = 2;
    assert_int_equal(certs_init_ca(f->dir, NULL, s_err, sizeof s_err), 0);
    assert_int_equal(certs_issue(f->dir, "gpu-node1", &opts, s_err, sizeof s_err), 0);
    assert_int_equal(tu_mode(s_path(f, "gpu-node1.key")), 0600);
    assert_int_equal(tu_mode(s_path(f, "gpu-node1.crt")), 0644);
    assert_int_equal(s_verify(f, "gpu-node1.crt"), X509_V_OK);

    X509 *x = s_cert(f, "gpu-node1.crt");
    assert_int_equal(X509_check_host(x, "gpu-node1", 0, 0, NULL), 1);
    assert_int_equal(X509_check_host(x, "gpu-node2", 0, 0, NULL), 0);
    assert_int_equal(X509_check_ip_asc(x, "10.0.0.7", 0), 1);
    assert_int_equal(X509_check_ip_asc(x, "fd00::7", 0), 1);
    assert_int_equal(X509_check_ip_asc(x, "10.0.0.8", 0), 0);
    assert_false(X509_get_extension_flags(x) & EXFLAG_CA);
    assert_int_equal(X509_get_extended_key_usage(x) & (XKU_SSL_SERVER | XKU_SSL_CLIENT),
                     XKU_SSL_SERVER | XKU_SSL_CLIENT);
    assert_in_range(s_days_from_now(X509_get0_notAfter(x)), 364, 365);
    X509_free(x);

    /* An address as the name is also an IP SAN. */
    assert_int_equal(certs_issue(f->dir, "127.0.0.1", NULL, s_err, sizeof s_err), 0);
    x = s_cert(f, "127.0.0.1.crt");
    assert_int_equal(X509_check_ip_asc(x, "127.0.0.1", 0), 1);
    X509_free(x);
}

static void test_issue_refuses_overwrite_and_bad_input(void **state)
{
    struct fix *f = *state;
    const char *bad_ip[] = { "10.0.0.300" };
    certs_opts_t opts = CERTS_OPTS_ZERO;

    assert_int_equal(certs_issue(f->dir, "n1", NULL, s_err, sizeof s_err), -1);
    assert_non_null(strstr(s_err, "plaunch certs init"));
    assert_non_null(strstr(s_err, f->dir));

    assert_int_equal(certs_init_ca(f->dir, NULL, s_err, sizeof s_err), 0);
    assert_int_equal(certs_issue(f->dir, "n1", NULL, s_err, sizeof s_err), 0);
    assert_int_equal(certs_issue(f->dir, "n1", NULL, s_err, sizeof s_err), -1);
    assert_non_null(strstr(s_err, "n1.key already exists"));

    assert_int_equal(certs_issue(f->dir, "../evil", NULL, s_err, sizeof s_err), -1);
    assert_non_null(strstr(s_err, "'../evil'"));
    assert_int_equal(certs_issue(f->dir, "ca", NULL, s_err, sizeof s_err), -1);

    opts.ips = bad_ip;
    opts.nips = 1;
    assert_int_equal(certs_issue(f->dir, "n2", &opts, s_err, sizeof s_err), -1);
    assert_non_null(strstr(s_err, "'10.0.0.300' is not an IPv4 or IPv6 address"));
    assert_int_equal(access(s_path(f, "n2.key"), F_OK), -1); /* no partial result */
}

static void test_issue_expired_for_tests(void **state)
{
    struct fix *f = *state;
    certs_opts_t opts = CERTS_OPTS_ZERO;
    opts.not_before = time(NULL) - 30 * 86400;
    opts.not_after = time(NULL) - 86400;
    assert_int_equal(certs_init_ca(f->dir, NULL, s_err, sizeof s_err), 0);
    assert_int_equal(certs_issue(f->dir, "old", &opts, s_err, sizeof s_err), 0);
    assert_int_equal(s_verify(f, "old.crt"), X509_V_ERR_CERT_HAS_EXPIRED);
}

static void test_keys_must_be_owner_only(void **state)
{
    struct fix *f = *state;
    assert_int_equal(certs_init_ca(f->dir, NULL, s_err, sizeof s_err), 0);
    assert_int_equal(chmod(s_path(f, "ca.key"), 0640), 0);
    assert_null(certs_load_key(s_path(f, "ca.key"), s_err, sizeof s_err));
    assert_non_null(strstr(s_err, "mode 0640"));
    assert_non_null(strstr(s_err, "chmod 600"));
    /* issue goes through the same check. */
    assert_int_equal(certs_issue(f->dir, "n1", NULL, s_err, sizeof s_err), -1);
    assert_non_null(strstr(s_err, "chmod 600"));
}

static void test_secfile_write_modes(void **state)
{
    struct fix *f = *state;
    char buf[64];
    size_t len = 0;
    mode_t old = umask(0);
    assert_int_equal(mkdir(f->dir, 0700), 0);
    assert_int_equal(secfile_write(s_path(f, "s"), "abc", 3, 0600, 0, s_err, sizeof s_err), 0);
    umask(old);
    assert_int_equal(tu_mode(s_path(f, "s")), 0600);
    assert_int_equal(secfile_write(s_path(f, "s"), "xyz", 3, 0600, 0, s_err, sizeof s_err), -1);
    assert_int_equal(secfile_write(s_path(f, "s"), "xyz", 3, 0600, 1, s_err, sizeof s_err), 0);
    assert_int_equal(secfile_read(s_path(f, "s"), "test file", buf, sizeof buf, &len, s_err, sizeof s_err), 0);
    assert_int_equal(len, 3);
    assert_string_equal(buf, "xyz");
    assert_int_equal(secfile_read(f->dir, "test file", buf, sizeof buf, &len, s_err, sizeof s_err), -1);
    assert_non_null(strstr(s_err, "not a regular file"));
}

/* Runs cmd_certs with a NULL-terminated argument list; returns its exit code, stderr in *out. */
static int s_cmd(const char **out, ...)
{
    char *argv[32];
    int argc = 0, rc;
    va_list ap;
    va_start(ap, out);
    while ((argv[argc] = va_arg(ap, char *)) != NULL)
        argc++;
    va_end(ap);
    tu_capture_begin();
    rc = cmd_certs(argc, argv);
    *out = tu_capture_end();
    return rc;
}

static void test_cmd_usage_errors(void **state)
{
    struct fix *f = *state;
    const char *out;
    assert_int_equal(s_cmd(&out, "certs", "--help", NULL), 0);
    assert_non_null(strstr(out, "Usage: plaunch certs init DIR"));
    assert_int_equal(s_cmd(&out, "certs", "issue", "--help", NULL), 0);
    assert_non_null(strstr(out, "--ip ADDR"));
    assert_int_equal(s_cmd(&out, "certs", NULL), 2);
    assert_non_null(strstr(out, "missing subcommand"));
    assert_int_equal(s_cmd(&out, "certs", "bogus", NULL), 2);
    assert_non_null(strstr(out, "'bogus'"));
    assert_int_equal(s_cmd(&out, "certs", "init", NULL), 2);
    assert_non_null(strstr(out, "missing the certificate directory"));
    assert_int_equal(s_cmd(&out, "certs", "init", f->dir, "--days", "abc", NULL), 2);
    assert_non_null(strstr(out, "--days 'abc'"));
    assert_int_equal(s_cmd(&out, "certs", "init", f->dir, "--days=0", NULL), 2);
    assert_non_null(strstr(out, "--days '0'"));
    assert_int_equal(s_cmd(&out, "certs", "init", f->dir, "--frobnicate", NULL), 2);
    assert_non_null(strstr(out, "'--frobnicate'"));
    assert_int_equal(s_cmd(&out, "certs", "issue", f->dir, "n1", "--ip", "999.1.1.1", NULL), 2);
    assert_non_null(strstr(out, "--ip '999.1.1.1'"));
    assert_int_equal(s_cmd(&out, "certs", "issue", f->dir, "n1", "n2", "--ip", "10.0.0.1", NULL), 2);
    assert_int_equal(s_cmd(&out, "certs", "issue", f->dir, "bad/name", NULL), 2);
    assert_non_null(strstr(out, "'bad/name'"));
    assert_int_equal(s_cmd(&out, "certs", "issue", f->dir, NULL), 2);
    assert_int_equal(s_cmd(&out, "certs", "issue", f->dir, "n1", "--days", NULL), 2);
    assert_non_null(strstr(out, "'--days' needs a value"));
    /* Nothing was created by any of these. */
    assert_int_equal(access(f->dir, F_OK), -1);
}

static void test_cmd_init_and_issue(void **state)
{
    struct fix *f = *state;
    const char *out;
    assert_int_equal(s_cmd(&out, "certs", "issue", f->dir, "n1", NULL), 1);
    assert_non_null(strstr(out, "ca.crt is missing"));

    assert_int_equal(s_cmd(&out, "certs", "init", f->dir, NULL), 0);
    assert_non_null(strstr(out, "created job CA"));
    assert_int_equal(s_cmd(&out, "certs", "init", f->dir, NULL), 1);
    assert_non_null(strstr(out, "already exists"));
    assert_int_equal(s_cmd(&out, "certs", "init", "--force", f->dir, NULL), 0);

    assert_int_equal(s_cmd(&out, "certs", "issue", f->dir, "coord", "--ip=127.0.0.1", "--days", "30", NULL), 0);
    assert_int_equal(s_cmd(&out, "certs", "issue", f->dir, "a", "b", "c", NULL), 0);
    assert_int_equal(s_verify(f, "coord.crt"), X509_V_OK);
    assert_int_equal(s_verify(f, "c.crt"), X509_V_OK);
    X509 *x = s_cert(f, "coord.crt");
    assert_int_equal(X509_check_ip_asc(x, "127.0.0.1", 0), 1);
    assert_in_range(s_days_from_now(X509_get0_notAfter(x)), 29, 30);
    X509_free(x);

    assert_int_equal(s_cmd(&out, "certs", "issue", f->dir, "a", NULL), 1);
    assert_non_null(strstr(out, "a.key already exists"));
    assert_int_equal(s_cmd(&out, "certs", "issue", f->dir, "a", "--force", NULL), 0);

    /* A runtime failure names the path and the OS reason. */
    assert_int_equal(s_cmd(&out, "certs", "init", "/proc/no/such/dir", NULL), 1);
    assert_non_null(strstr(out, "/proc/no/such/dir"));
    assert_non_null(strstr(out, "No such file or directory"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_init_creates_private_ca, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_init_refuses_to_overwrite_without_force, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_issue_node_certificate, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_issue_refuses_overwrite_and_bad_input, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_issue_expired_for_tests, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_keys_must_be_owner_only, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_secfile_write_modes, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_cmd_usage_errors, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_cmd_init_and_issue, s_setup, s_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
