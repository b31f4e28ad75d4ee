/* replay_main: runs files through a fuzz target's LLVMFuzzerTestOneInput without
 * libFuzzer, so the checked-in regressions and corpus are replayed by ctest in the
 * normal (gcc) and ASan builds. Arguments are files or directories (every regular
 * file in them, names starting with '.' skipped); it fails when a path does not
 * exist or no input was found at all, so a missing directory cannot pass unnoticed. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static long nrun;

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        return 1;
    }
    size_t cap = 4096, len = 0;
    uint8_t *buf = malloc(cap);
    size_t n;
    while ((n = fread(buf + len, 1, cap - len, f)) > 0) {
        len += n;
        if (len == cap) buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    /* an exact-size copy: reads past the input are caught by ASan as under libFuzzer */
    uint8_t *exact = malloc(len ? len : 1);
    memcpy(exact, buf, len);
    free(buf);
    if (getenv("REPLAY_VERBOSE")) fprintf(stderr, "replay: %s (%zu bytes)\n", path, len);
    LLVMFuzzerTestOneInput(exact, len);
    free(exact);
    nrun++;
    return 0;
}

static int cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int run_path(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "replay: %s does not exist\n", path);
        return 1;
    }
    if (!S_ISDIR(st.st_mode)) return run_file(path);
    DIR *d = opendir(path);
    if (!d) return 1;
    char **names = NULL;
    size_t nn = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        names = realloc(names, sizeof(char *) * (nn + 1));
        size_t l = strlen(path) + strlen(e->d_name) + 2;
        names[nn] = malloc(l);
        snprintf(names[nn], l, "%s/%s", path, e->d_name);
        nn++;
    }
    closedir(d);
    if (nn) qsort(names, nn, sizeof(char *), cmp); /* a fixed order: the same run every time */
    int bad = 0;
    for (size_t i = 0; i < nn; i++) {
        if (stat(names[i], &st) == 0 && S_ISREG(st.st_mode)) bad |= run_file(names[i]);
        free(names[i]);
    }
    free(names);
    return bad;
}

int main(int argc, char **argv)
{
    int bad = 0;
    for (int i = 1; i < argc; i++) bad |= run_path(argv[i]);
    if (nrun == 0) {
        fprintf(stderr, "replay: no input found\n");
        return 1;
    }
    printf("replay: %ld inputs, no failure\n", nrun);
    return bad;
}
