/* opts_ini: the --config file: an INI file (inih) of option keys in a [plaunch] section, errors naming file:line. */
#include "launcher/opts/opts_priv.h"

#include <errno.h>
#include <ini.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "common/optfile.h"

struct ini_state {
    opts_ini_key_fn key;
    void *arg;
    FILE *f;
    int lineno;                /* counted by s_ini_reader: the Debian inih has no line numbers */
    size_t bytes;              /* read so far: a file that grows while read still ends at the bound */
    const char *path;
    char *err;
    size_t errlen;
    int failed;
};

/* fgets for inih that counts lines, so errors can name file:line. The Debian inih reads 200 bytes at a time:
 * the rest of a longer line is consumed here; a long comment is fine, a long setting is an error. */
static char *s_ini_reader(char *buf, int size, void *stream)
{
    struct ini_state *st = stream;
    char *r = fgets(buf, size, st->f);
    if (!r)
        return NULL;
    st->lineno++;
    size_t len = strlen(buf);
    if ((st->bytes += len) > OPTFILE_MAX_CONFIG) {
        if (!st->failed)
            snprintf(st->err, st->errlen, "config file '%s' is too large: more than %u bytes", st->path,
                     OPTFILE_MAX_CONFIG);
        st->failed = 1;
        return NULL;
    }
    if (len > 0 && buf[len - 1] != '\n' && !feof(st->f)) {
        int c;
        while ((c = fgetc(st->f)) != EOF && c != '\n')
            ;
        const char *p = buf + strspn(buf, " \t");
        if (*p != ';' && *p != '#' && !st->failed) {
            snprintf(st->err, st->errlen, "%s:%d: line is longer than %d characters", st->path, st->lineno,
                     size - 2);
            st->failed = 1;
        }
        snprintf(buf, (size_t)size, ";\n");
    }
    return r;
}

static int s_ini_handler(void *user, const char *section, const char *name, const char *value)
{
    struct ini_state *st = user;
    int lineno = st->lineno;
    char where[PATH_MAX + 32];
    if (st->failed)
        return 1;
    snprintf(where, sizeof where, "%s:%d", st->path, lineno);
    if (section[0] && strcmp(section, "plaunch") != 0) {
        snprintf(st->err, st->errlen, "%s:%d: unknown section [%s]; options belong in [plaunch]", st->path,
                 lineno, section);
        st->failed = 1;
        return 1;
    }
    if (st->key(st->arg, name, value, where, st->err, st->errlen) < 0)
        st->failed = 1;
    return 1;
}

int opts_ini_read(const char *path, opts_ini_key_fn key, void *arg, char *err, size_t errlen)
{
    struct ini_state st = { .key = key, .arg = arg, .path = path, .err = err, .errlen = errlen };
    st.f = optfile_fopen(path, "config file", OPTFILE_MAX_CONFIG, err, errlen);
    if (!st.f)
        return -1;
    int rc = ini_parse_stream(s_ini_reader, &st, s_ini_handler, &st);
    int read_error = ferror(st.f) ? errno : 0;
    fclose(st.f);
    if (read_error) {
        snprintf(err, errlen, "config file '%s': %s", path, strerror(read_error));
        return -1;
    }
    if (st.failed)
        return -1;
    if (rc != 0) {
        snprintf(err, errlen, "config file '%s' line %d: not 'key = value' (or a line over 200 characters)",
                 path, rc);
        return -1;
    }
    return 0;
}
