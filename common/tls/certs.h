/* certs: the private job CA and node certificates (plaunch certs), made and loaded with the OpenSSL API. */
#ifndef PLAUNCH_CERTS_H
#define PLAUNCH_CERTS_H

/* Files in a certificate directory (created 0700): ca.key (0600) + ca.crt, and per node NAME.key (0600) + NAME.crt.
 * Keys are EC P-256; certificates are signed with SHA-256. Functions return 0 / a pointer, or -1 / NULL with a
 * message in err that names the path and the reason. */

#include <stddef.h>
#include <time.h>

#include <openssl/evp.h>
#include <openssl/x509.h>

#define CERTS_CA_DAYS 3650
#define CERTS_NODE_DAYS 365
#define CERTS_DAYS_MAX 36500
#define CERTS_NAME_MAX 200
#define CERTS_BACKDATE_S 3600 /* notBefore = now - this, so nodes with a slow clock accept a fresh certificate */

typedef struct certs_opts {
    int days;                 /* validity from now; 0: CERTS_CA_DAYS for a CA, CERTS_NODE_DAYS for a node */
    time_t not_before;        /* both set: exactly this validity, e.g. in the past for tests of expiry */
    time_t not_after;
    const char *const *ips;   /* extra IP address SANs of a node certificate */
    size_t nips;
    int force;                /* replace existing files instead of refusing */
} certs_opts_t;
#define CERTS_OPTS_ZERO { 0, 0, 0, NULL, 0, 0 }

/* Creates DIR (0700) if needed and a new CA in it: ca.key and ca.crt (CA:TRUE, pathlen 0, keyCertSign+cRLSign).
 * An existing CA is kept unless opts->force. opts may be NULL. */
int certs_init_ca(const char *dir, const certs_opts_t *opts, char *err, size_t errlen);
/* Issues DIR/NAME.key + DIR/NAME.crt signed by DIR's CA: CN=NAME, SAN DNS:NAME (plus IP:NAME when NAME is an
 * address, plus opts->ips), EKU serverAuth+clientAuth. Existing files are kept unless opts->force. */
int certs_issue(const char *dir, const char *name, const certs_opts_t *opts, char *err, size_t errlen);

/* 0 when name can be a node name (and file name): letters, digits, '.', '-', '_', ':'; not "ca", no leading '.'. */
int certs_check_name(const char *name, char *err, size_t errlen);
/* Loads a PEM private key from a file only its owner may read. Caller frees with EVP_PKEY_free. */
EVP_PKEY *certs_load_key(const char *path, char *err, size_t errlen);
/* Loads the first PEM certificate of path. Caller frees with X509_free. */
X509 *certs_load_cert(const char *path, char *err, size_t errlen);
/* Copies OpenSSL's most recent error reason into buf (or "unknown OpenSSL error") and clears the queue. */
const char *certs_ssl_reason(char *buf, size_t len);

#endif
