/*
 * Replays the fuzz target over files and directories given on the command
 * line (every regular file, and every prefix of files up to 4 KiB), so the
 * committed seed corpus runs in every build, with or without libFuzzer.
 * Exit status 0 when every input was processed; a failed property aborts.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open '%s'\n", path);
        return -1;
    }
    size_t cap = 4096, len = 0, got;
    uint8_t *buf = xmalloc(cap);
    while ((got = fread(buf + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len == cap)
            xgrow((void **)&buf, 1, &cap, len + 1);
    }
    fclose(f);
    LLVMFuzzerTestOneInput(buf, len);
    if (len <= 4096)
        for (size_t k = 0; k < len; k++)
            LLVMFuzzerTestOneInput(buf, k);
    free(buf);
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
    int files = 0, bad = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: cannot stat '%s'\n", argv[i]);
            bad++;
            continue;
        }
        if (!S_ISDIR(st.st_mode)) {
            bad += run_file(argv[i]) != 0;
            files++;
            continue;
        }
        DIR *dir = opendir(argv[i]);
        if (!dir) {
            bad++;
            continue;
        }
        char **names = NULL;
        size_t n = 0, cap = 0;
        struct dirent *de;
        while ((de = readdir(dir))) {
            if (de->d_name[0] == '.')
                continue;
            xgrow((void **)&names, sizeof(*names), &cap, n + 1);
            size_t len = strlen(argv[i]) + strlen(de->d_name) + 2;
            names[n] = xmalloc(len);
            snprintf(names[n++], len, "%s/%s", argv[i], de->d_name);
        }
        closedir(dir);
        qsort(names, n, sizeof(*names), cmp_str);
        for (size_t k = 0; k < n; k++) {
            bad += run_file(names[k]) != 0;
            files++;
            free(names[k]);
        }
        free(names);
    }
    printf("replayed %d file(s), %d unreadable\n", files, bad);
    return bad || files == 0 ? 1 : 0;
}
