/* certs: the private job CA and node certificates (plaunch certs), made and loaded with the OpenSSL API. */
#include "common/tls/certs.h"

#include "common/optfile.h"
#include "common/secfile.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#define KEY_FILE_MAX (OPTFILE_MAX_PEM + 1)

const char *certs_ssl_reason(char *buf, size_t len)
{
    unsigned long e = ERR_peek_last_error();
    const char *reason = e ? ERR_reason_error_string(e) : NULL;
    if (reason)
        snprintf(buf, len, "%s", reason);
    else if (e)
        ERR_error_string_n(e, buf, len);
    else
        snprintf(buf, len, "unknown OpenSSL error");
    ERR_clear_error();
    return buf;
}

int certs_check_name(const char *name, char *err, size_t errlen)
{
    size_t n = name ? strlen(name) : 0;
    if (n == 0 || n > CERTS_NAME_MAX) {
        snprintf(err, errlen, "node name '%s' must have 1 to %d characters", name ? name : "", CERTS_NAME_MAX);
        return -1;
    }
    if (name[0] == '.' || name[0] == '-' || strcmp(name, "ca") == 0 ||
        strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_:") != n) {
        snprintf(err, errlen,
                 "invalid node name '%s': use letters, digits, '.', '-', '_' or ':' (not first '.' or '-'), "
                 "and not 'ca'", name);
        return -1;
    }
    return 0;
}

EVP_PKEY *certs_load_key(const char *path, char *err, size_t errlen)
{
    char buf[KEY_FILE_MAX], reason[256];
    size_t len = 0;
    EVP_PKEY *key = NULL;
    BIO *bio = NULL;
    if (secfile_read(path, "key file", buf, sizeof buf, &len, err, errlen) < 0)
        return NULL;
    bio = BIO_new_mem_buf(buf, (int)len);
    if (bio)
        key = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
    if (!key)
        snprintf(err, errlen, "cannot parse private key %s: %s (expected an unencrypted PEM key)", path,
                 certs_ssl_reason(reason, sizeof reason));
    BIO_free(bio);
    OPENSSL_cleanse(buf, sizeof buf);
    return key;
}

X509 *certs_load_cert(const char *path, char *err, size_t errlen)
{
    char reason[256];
    X509 *cert;
    FILE *f = optfile_fopen(path, "certificate", OPTFILE_MAX_PEM, err, errlen);
    if (!f)
        return NULL;
    cert = PEM_read_X509(f, NULL, NULL, NULL);
    fclose(f);
    if (!cert)
        snprintf(err, errlen, "cannot parse certificate %s: %s (expected PEM)", path,
                 certs_ssl_reason(reason, sizeof reason));
    return cert;
}

/* Creates dir owner-only; an existing directory is used as it is. */
static int s_make_dir(const char *dir, char *err, size_t errlen)
{
    struct stat st;
    if (mkdir(dir, 0700) == 0) {
        if (chmod(dir, 0700) == 0)
            return 0;
    } else if (errno == EEXIST && stat(dir, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            return 0;
        errno = ENOTDIR;
    }
    snprintf(err, errlen, "cannot create directory %s: %s", dir, strerror(errno));
    return -1;
}

static int s_path(char *buf, size_t len, const char *dir, const char *base, const char *ext, char *err,
                  size_t errlen)
{
    if (snprintf(buf, len, "%s/%s%s", dir, base, ext) < (int)len)
        return 0;
    snprintf(err, errlen, "path too long: %s/%s%s", dir, base, ext);
    return -1;
}

static int s_set_validity(X509 *x, const certs_opts_t *opts, int default_days, char *err, size_t errlen)
{
    time_t now = time(NULL), nb, na;
    if (opts->not_before && opts->not_after) {
        nb = opts->not_before;
        na = opts->not_after;
    } else {
        int days = opts->days ? opts->days : default_days;
        if (days < 1 || days > CERTS_DAYS_MAX) {
            snprintf(err, errlen, "validity of %d days is out of range (1 to %d)", days, CERTS_DAYS_MAX);
            return -1;
        }
        nb = now - CERTS_BACKDATE_S;
        na = now + (time_t)days * 86400;
    }
    if (!ASN1_TIME_set(X509_getm_notBefore(x), nb) || !ASN1_TIME_set(X509_getm_notAfter(x), na)) {
        snprintf(err, errlen, "cannot set certificate validity");
        return -1;
    }
    return 0;
}

/* The parts every certificate shares: v3, random positive serial, subject CN, issuer, validity, public key. */
static X509 *s_new_cert(const char *cn, EVP_PKEY *key, X509 *issuer, const certs_opts_t *opts, int default_days,
                        char *err, size_t errlen)
{
    char reason[256];
    X509 *x = X509_new();
    BIGNUM *serial = BN_new();
    X509_NAME *name = X509_NAME_new();
    if (!x || !serial || !name || !X509_set_version(x, 2) ||
        !BN_rand(serial, 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) ||
        !BN_to_ASN1_INTEGER(serial, X509_get_serialNumber(x)) ||
        !X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1, -1, 0) ||
        !X509_set_subject_name(x, name) ||
        !X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : name) || !X509_set_pubkey(x, key)) {
        snprintf(err, errlen, "cannot build certificate for '%s': %s", cn, certs_ssl_reason(reason, sizeof reason));
        goto error;
    }
    if (s_set_validity(x, opts, default_days, err, errlen) < 0)
        goto error;
    BN_free(serial);
    X509_NAME_free(name);
    return x;
error:
    X509_free(x);
    BN_free(serial);
    X509_NAME_free(name);
    return NULL;
}

/* Adds extensions given in OpenSSL's config syntax: list of nid, value pairs ending with NID_undef. */
static int s_add_exts(X509 *x, X509 *issuer, const int *nids, const char *const *values, char *err, size_t errlen)
{
    char reason[256];
    X509V3_CTX v3;
    X509V3_set_ctx(&v3, issuer, x, NULL, NULL, 0);
    for (size_t i = 0; nids[i] != NID_undef; i++) {
        X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &v3, nids[i], values[i]);
        int ok = ext && X509_add_ext(x, ext, -1);
        X509_EXTENSION_free(ext);
        if (!ok) {
            snprintf(err, errlen, "cannot add extension %s=%s: %s", OBJ_nid2sn(nids[i]), values[i],
                     certs_ssl_reason(reason, sizeof reason));
            return -1;
        }
    }
    return 0;
}

static int s_push_san(GENERAL_NAMES *gens, int type, const char *value, char *err, size_t errlen)
{
    GENERAL_NAME *gen = GENERAL_NAME_new();
    ASN1_STRING *s = NULL;
    if (type == GEN_IPADD) {
        s = a2i_IPADDRESS(value);
        if (!s) {
            ERR_clear_error();
            snprintf(err, errlen, "'%s' is not an IPv4 or IPv6 address", value);
            goto error;
        }
    } else {
        s = ASN1_IA5STRING_new();
        if (!s || !ASN1_STRING_set(s, value, -1))
            goto nomem;
    }
    if (!gen)
        goto nomem;
    GENERAL_NAME_set0_value(gen, type, s);
    s = NULL;
    if (!sk_GENERAL_NAME_push(gens, gen))
        goto nomem;
    return 0;
nomem:
    snprintf(err, errlen, "out of memory building the subjectAltName");
error:
    ASN1_STRING_free(s);
    GENERAL_NAME_free(gen);
    return -1;
}

static int s_is_ip(const char *s)
{
    unsigned char buf[16];
    return inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1;
}

static int s_add_san(X509 *x, const char *name, const certs_opts_t *opts, char *err, size_t errlen)
{
    char reason[256];
    int rc = -1;
    GENERAL_NAMES *gens = sk_GENERAL_NAME_new_null();
    if (!gens || s_push_san(gens, GEN_DNS, name, err, errlen) < 0)
        goto done;
    if (s_is_ip(name) && s_push_san(gens, GEN_IPADD, name, err, errlen) < 0)
        goto done;
    for (size_t i = 0; i < opts->nips; i++)
        if (s_push_san(gens, GEN_IPADD, opts->ips[i], err, errlen) < 0)
            goto done;
    if (!X509_add1_ext_i2d(x, NID_subject_alt_name, gens, 0, X509V3_ADD_DEFAULT)) {
        snprintf(err, errlen, "cannot add subjectAltName: %s", certs_ssl_reason(reason, sizeof reason));
        goto done;
    }
    rc = 0;
done:
    GENERAL_NAMES_free(gens);
    return rc;
}

static int s_sign(X509 *x, EVP_PKEY *key, char *err, size_t errlen)
{
    char reason[256];
    if (X509_sign(x, key, EVP_sha256()) > 0)
        return 0;
    snprintf(err, errlen, "cannot sign certificate: %s", certs_ssl_reason(reason, sizeof reason));
    return -1;
}

static EVP_PKEY *s_new_key(char *err, size_t errlen)
{
    char reason[256];
    EVP_PKEY *key = EVP_EC_gen("P-256");
    if (!key)
        snprintf(err, errlen, "cannot generate an EC P-256 key: %s", certs_ssl_reason(reason, sizeof reason));
    return key;
}

/* PEM-encodes key (or cert when key is NULL) into a malloc'd buffer. */
static char *s_pem(EVP_PKEY *key, X509 *cert, size_t *len, char *err, size_t errlen)
{
    char reason[256], *data, *out = NULL;
    BIO *bio = BIO_new(BIO_s_mem());
    int ok = bio && (key ? PEM_write_bio_PrivateKey(bio, key, NULL, NULL, 0, NULL, NULL)
                         : PEM_write_bio_X509(bio, cert));
    long n = ok ? BIO_get_mem_data(bio, &data) : 0;
    if (n > 0 && (out = OPENSSL_malloc((size_t)n)) != NULL) {
        memcpy(out, data, (size_t)n);
        *len = (size_t)n;
    } else {
        snprintf(err, errlen, "cannot encode %s: %s", key ? "key" : "certificate",
                 certs_ssl_reason(reason, sizeof reason));
    }
    BIO_free(bio);
    return out;
}

/* Writes DIR/BASE.key (0600) and DIR/BASE.crt (0644): both or, on failure, neither (unless replacing). */
static int s_write_pair(const char *dir, const char *base, EVP_PKEY *key, X509 *cert, int force, char *err,
                        size_t errlen)
{
    char kpath[4096], cpath[4096];
    size_t klen = 0, clen = 0;
    char *kpem = NULL, *cpem = NULL;
    int rc = -1;
    if (s_path(kpath, sizeof kpath, dir, base, ".key", err, errlen) < 0 ||
        s_path(cpath, sizeof cpath, dir, base, ".crt", err, errlen) < 0)
        return -1;
    if (!(kpem = s_pem(key, NULL, &klen, err, errlen)) || !(cpem = s_pem(NULL, cert, &clen, err, errlen)))
        goto done;
    if (secfile_write(kpath, kpem, klen, 0600, force, err, errlen) < 0)
        goto done;
    if (secfile_write(cpath, cpem, clen, 0644, force, err, errlen) < 0) {
        if (!force)
            unlink(kpath);
        goto done;
    }
    rc = 0;
done:
    OPENSSL_clear_free(kpem, klen);
    OPENSSL_free(cpem);
    return rc;
}

/* Without force, refuses early (before any key is generated) when either file of the pair exists. */
static int s_check_absent(const char *dir, const char *base, int force, const char *advice, char *err,
                          size_t errlen)
{
    static const char *const exts[] = { ".key", ".crt" };
    char path[4096];
    struct stat st;
    for (size_t i = 0; !force && i < 2; i++) {
        if (s_path(path, sizeof path, dir, base, exts[i], err, errlen) < 0)
            return -1;
        if (lstat(path, &st) == 0) {
            snprintf(err, errlen, "%s already exists; %s", path, advice);
            return -1;
        }
    }
    return 0;
}

int certs_init_ca(const char *dir, const certs_opts_t *opts, char *err, size_t errlen)
{
    static const int nids[] = { NID_basic_constraints, NID_key_usage, NID_subject_key_identifier,
                                NID_authority_key_identifier, NID_undef };
    static const char *const values[] = { "critical,CA:TRUE,pathlen:0", "critical,keyCertSign,cRLSign", "hash",
                                          "keyid:always" };
    certs_opts_t zero = CERTS_OPTS_ZERO;
    unsigned char tag[4];
    char cn[64];
    EVP_PKEY *key = NULL;
    X509 *x = NULL;
    int rc = -1;
    if (!opts)
        opts = &zero;
    if (s_make_dir(dir, err, errlen) < 0 ||
        s_check_absent(dir, "ca", opts->force,
                       "use --force to replace the CA (every certificate it issued stops being accepted)", err,
                       errlen) < 0)
        return -1;
    /* A random tag in the name tells two job CAs apart in "not signed by the job CA" messages. */
    if (RAND_bytes(tag, sizeof tag) != 1) {
        snprintf(err, errlen, "cannot get random bytes for the CA name");
        return -1;
    }
    snprintf(cn, sizeof cn, "plaunch job CA %02x%02x%02x%02x", tag[0], tag[1], tag[2], tag[3]);
    if (!(key = s_new_key(err, errlen)) || !(x = s_new_cert(cn, key, NULL, opts, CERTS_CA_DAYS, err, errlen)) ||
        s_add_exts(x, x, nids, values, err, errlen) < 0 || s_sign(x, key, err, errlen) < 0 ||
        s_write_pair(dir, "ca", key, x, opts->force, err, errlen) < 0)
        goto done;
    rc = 0;
done:
    EVP_PKEY_free(key);
    X509_free(x);
    return rc;
}

/* Loads DIR's CA and checks that its key and certificate belong together and that it can still sign. */
static int s_load_ca(const char *dir, X509 **ca, EVP_PKEY **cakey, char *err, size_t errlen)
{
    char cpath[4096], kpath[4096];
    if (s_path(cpath, sizeof cpath, dir, "ca", ".crt", err, errlen) < 0 ||
        s_path(kpath, sizeof kpath, dir, "ca", ".key", err, errlen) < 0)
        return -1;
    if (access(cpath, F_OK) < 0 && errno == ENOENT) {
        snprintf(err, errlen, "no CA in %s (%s is missing); create one with: plaunch certs init %s", dir, cpath,
                 dir);
        return -1;
    }
    if (!(*ca = certs_load_cert(cpath, err, errlen)) || !(*cakey = certs_load_key(kpath, err, errlen)))
        goto error;
    if (X509_check_private_key(*ca, *cakey) != 1) {
        ERR_clear_error();
        snprintf(err, errlen, "%s does not belong to %s; restore the matching pair or run plaunch certs init --force",
                 kpath, cpath);
        goto error;
    }
    if (X509_cmp_current_time(X509_get0_notAfter(*ca)) < 0) {
        snprintf(err, errlen, "the CA %s has expired; create a new one with: plaunch certs init --force %s", cpath,
                 dir);
        goto error;
    }
    return 0;
error:
    X509_free(*ca);
    EVP_PKEY_free(*cakey);
    *ca = NULL;
    *cakey = NULL;
    return -1;
}

int certs_issue(const char *dir, const char *name, const certs_opts_t *opts, char *err, size_t errlen)
{
    static const int nids[] = { NID_basic_constraints, NID_key_usage, NID_ext_key_usage,
                                NID_subject_key_identifier, NID_authority_key_identifier, NID_undef };
    static const char *const values[] = { "critical,CA:FALSE", "critical,digitalSignature",
                                          "serverAuth,clientAuth", "hash", "keyid:always" };
    certs_opts_t zero = CERTS_OPTS_ZERO;
    char advice[CERTS_NAME_MAX + 128];
    X509 *ca = NULL, *x = NULL;
    EVP_PKEY *cakey = NULL, *key = NULL;
    int rc = -1;
    if (!opts)
        opts = &zero;
    snprintf(advice, sizeof advice, "use --force to issue a new key and certificate for '%s'", name);
    if (certs_check_name(name, err, errlen) < 0 || s_check_absent(dir, name, opts->force, advice, err, errlen) < 0 ||
        s_load_ca(dir, &ca, &cakey, err, errlen) < 0)
        return -1;
    if (!(key = s_new_key(err, errlen)) || !(x = s_new_cert(name, key, ca, opts, CERTS_NODE_DAYS, err, errlen)) ||
        s_add_exts(x, ca, nids, values, err, errlen) < 0 || s_add_san(x, name, opts, err, errlen) < 0 ||
        s_sign(x, cakey, err, errlen) < 0 || s_write_pair(dir, name, key, x, opts->force, err, errlen) < 0)
        goto done;
    rc = 0;
done:
    X509_free(ca);
    X509_free(x);
    EVP_PKEY_free(cakey);
    EVP_PKEY_free(key);
    return rc;
}
