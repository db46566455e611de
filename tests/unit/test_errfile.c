/* Unit tests for errfile: what the root-cause block quotes from a TORCHELASTIC_ERROR_FILE, and what it refuses. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "launcher/supervisor/errfile.h"

static char s_dir[] = "/tmp/plaunch-test-errfile-XXXXXX";
static char s_path[256];
static char s_lines[ERRFILE_MAX_LINES][ERRFILE_LINE];

static int s_setup(void **state)
{
    if (!mkdtemp(s_dir))
        return -1;
    errfile_path(s_dir, 3, s_path, sizeof s_path);
    return 0;
}

static int s_teardown(void **state)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", s_dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void s_write(const char *text, size_t len)
{
    unlink(s_path);
    int fd = open(s_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, len), (ssize_t)len);
    close(fd);
}

static int s_quote(void)
{
    memset(s_lines, 0, sizeof s_lines);
    return errfile_quote(s_path, 0, s_lines, ERRFILE_MAX_LINES);
}

/* The layout torch's @record writes: message first, then the traceback's frames, not the message again. */
static void test_torch_layout(void **state)
{
    static const char json[] =
        "{\"message\": {\"message\": \"RuntimeError: boom\", \"extraInfo\": {\"py_callstack\": "
        "\"Traceback (most recent call last):\\n  File \\\"t.py\\\", line 9, in <module>\\n    main()\\n"
        "  File \\\"t.py\\\", line 5, in main\\n    raise RuntimeError(\\\"boom\\\")\\nRuntimeError: boom\\n\", "
        "\"timestamp\": \"1764700000\"}}}";
    s_write(json, sizeof json - 1);
    assert_int_equal(s_quote(), 6);
    assert_string_equal(s_lines[0], "RuntimeError: boom");
    assert_string_equal(s_lines[1], "Traceback (most recent call last):");
    assert_string_equal(s_lines[4], "  File \"t.py\", line 5, in main");
    assert_string_equal(s_lines[5], "    raise RuntimeError(\"boom\")");
}

/* A deep traceback: only its last lines fit, after the message; the message's own lines are capped at 3. */
static void test_long_traceback_keeps_its_end(void **state)
{
    static char json[64 * 1024];
    size_t o = (size_t)snprintf(json, sizeof json, "{\"message\": {\"message\": \"E: a\\nb\\nc\\nd\", \"extraInfo\": "
                                "{\"py_callstack\": \"Traceback (most recent call last):\\n");
    for (int i = 0; i < 500; i++)
        o += (size_t)snprintf(json + o, sizeof json - o, "  frame %d\\n", i);
    o += (size_t)snprintf(json + o, sizeof json - o, "E: a\\nb\\nc\\nd\\n\"}}}");
    s_write(json, o);
    assert_int_equal(s_quote(), ERRFILE_MAX_LINES);
    assert_string_equal(s_lines[0], "E: a");
    assert_string_equal(s_lines[2], "c");
    assert_string_equal(s_lines[3], "  frame 493");
    assert_string_equal(s_lines[ERRFILE_MAX_LINES - 1], "  frame 499");
}

/* torch's newer form has a plain string as "message"; control characters never reach the terminal; long lines
 * are cut. */
static void test_string_message_sanitised_and_cut(void **state)
{
    static char json[4096];
    int n = snprintf(json, sizeof json, "{\"message\": \"bad\\u001b[31m thing %0300d\"}", 7);
    s_write(json, (size_t)n);
    assert_int_equal(s_quote(), 1);
    assert_int_equal(strncmp(s_lines[0], "bad?[31m thing 000", 18), 0);
    assert_int_equal(strlen(s_lines[0]), ERRFILE_LINE - 1);
    assert_string_equal(s_lines[0] + ERRFILE_LINE - 4, "...");
}

/* Anything that is not torch's JSON is named in one line, never parsed further. */
static void test_garbage_and_strangers(void **state)
{
    s_write("\x01garbage{", 9);
    assert_int_equal(s_quote(), 1);
    assert_string_equal(s_lines[0], "(not torch's JSON error file; it begins: ?garbage{)");
    s_write("[1, 2]", 6);
    assert_int_equal(s_quote(), 1);
    assert_non_null(strstr(s_lines[0], "without torch's \"message\" field"));
    s_write("", 0);
    assert_int_equal(s_quote(), 1);
    assert_string_equal(s_lines[0], "(error file is empty)");

    unlink(s_path);
    assert_int_equal(s_quote(), 0); /* no file: the worker wrote none */
    assert_int_equal(symlink("/etc/passwd", s_path), 0);
    assert_int_equal(s_quote(), 1);
    assert_string_equal(s_lines[0], "(error file not read: it is a symbolic link)");
    unlink(s_path);
    assert_int_equal(mkfifo(s_path, 0600), 0);
    assert_int_equal(s_quote(), 1); /* and it did not block */
    assert_non_null(strstr(s_lines[0], "not a regular file"));
    unlink(s_path);
}

/* A file older than the worker is not its failure's (one that could not be removed at the generation's start). */
static void test_older_than_the_worker(void **state)
{
    s_write("{\"message\": \"old\"}", 18);
    uint64_t later = ((uint64_t)time(NULL) + 60) * 1000;
    assert_int_equal(errfile_quote(s_path, later, s_lines, ERRFILE_MAX_LINES), 0);
}

/* errfile_clear removes this node's files (a planted link is removed, its target kept) and nothing else. */
static void test_clear(void **state)
{
    struct worker w[2] = { { .rank = 3 }, { .rank = 4 } };
    struct job job = { .node.nworkers = 2, .workers = w };
    char other[300], target[300];
    snprintf(job.node.log_dir, sizeof job.node.log_dir, "%s", s_dir);
    s_write("{}", 2);
    snprintf(target, sizeof target, "%s/target", s_dir);
    snprintf(other, sizeof other, "%s/error.4.json", s_dir);
    s_write("{}", 2);
    assert_int_equal(rename(s_path, target), 0);
    assert_int_equal(symlink(target, other), 0);
    s_write("{}", 2);
    errfile_clear(&job);
    assert_int_equal(access(s_path, F_OK), -1);
    assert_int_equal(access(other, F_OK), -1);
    assert_int_equal(access(target, F_OK), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_torch_layout),
        cmocka_unit_test(test_long_traceback_keeps_its_end),
        cmocka_unit_test(test_string_message_sanitised_and_cut),
        cmocka_unit_test(test_garbage_and_strangers),
        cmocka_unit_test(test_older_than_the_worker),
        cmocka_unit_test(test_clear),
    };
    return cmocka_run_group_tests(tests, s_setup, s_teardown);
}
