/* The few POSIX calls the C tests use that MinGW-w64 lacks or spells differently, so the same
 * tests build with -std=c11 for Linux and, cross-compiled, for Windows (scripts/test-windows).
 * Include after the system headers. */
#ifndef ACPH_TEST_PORTABLE_H
#define ACPH_TEST_PORTABLE_H

#ifdef _WIN32
#include <direct.h>
#include <errno.h>
#include <io.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Windows' mkdir takes no mode; the tests' directories are private scratch anyway. */
#define mkdir(path, mode) ((void)(mode), _mkdir(path))
/* No symbolic links are made on Windows by these tests: stat sees what lstat would. */
#define lstat(path, st) stat((path), (st))

/* mkdtemp: the Xs replaced until a fresh directory is made (bounded attempts). */
static inline char *acph_test_mkdtemp(char *tmpl) {
    size_t n = strlen(tmpl);
    if (n < 6 || strcmp(tmpl + n - 6, "XXXXXX") != 0) {
        errno = EINVAL;
        return NULL;
    }
    static const char digits[] = "abcdefghijklmnopqrstuvwxyz0123456789";
    for (int attempt = 0; attempt < 100; attempt++) {
        for (size_t i = n - 6; i < n; i++) tmpl[i] = digits[rand() % 36];
        if (_mkdir(tmpl) == 0) return tmpl;
        if (errno != EEXIST) return NULL;
    }
    return NULL;
}
#define mkdtemp acph_test_mkdtemp
#endif

#endif
