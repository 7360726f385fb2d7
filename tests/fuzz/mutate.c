/*
 * mutate.c - runs a libFuzzer-style target without libFuzzer: every file of the corpus
 * directories given on the command line, then for each of them a fixed,
 * seeded sweep of mutations (byte flips, cuts, duplicated ranges, JSON
 * tokens spliced in). Deterministic, so a failure reproduces; the input
 * that crashed (abort or segfault) is written to replay-crash.bin.
 *
 * usage: NAME [--mutations N] DIR...
 */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static const char *const tokens[] = {
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "\"",
    "null",
    "true",
    "false",
    "-1",
    "0",
    "1e999",
    "-0",
    "1.5",
    "9007199254740993",
    "\"graph\"",
    "\"nodes\"",
    "\"edges\"",
    "\"id\"",
    "\"x\"",
    "\"y\"",
    "\"source\"",
    "\"target\"",
    "\"width\"",
    "\"height\"",
    "\"budget_s\"",
    "\"seed\"",
    "\"target_k\"",
    "\"solver\"",
    "\"name\"",
    "\\u0000",
    "\\ud800",
    "\xff",
    "1073741824",
    "-1073741823",
    "{\"id\":0}",
    "{\"source\":0,\"target\":0}",
};

static const uint8_t *cur;
static size_t cur_len;

static void on_crash(int sig)
{
    int fd = open("replay-crash.bin", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
        ssize_t w = write(fd, cur, cur_len);
        (void)w;
        close(fd);
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

static void run(const uint8_t *d, size_t n)
{
    cur = d;
    cur_len = n;
    LLVMFuzzerTestOneInput(d, n);
}

static size_t mutate(const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
    size_t len = n < cap ? n : cap;
    memcpy(out, in, len);
    int steps = 1 + (int)(next() % 4);
    for (int s = 0; s < steps; s++) {
        size_t pos = len ? (size_t)(next() % (len + 1)) : 0;
        switch (next() % 5) {
        case 0: /* flip a byte */
            if (len)
                out[pos % len] ^= (uint8_t)(1u << (next() % 8));
            break;
        case 1: /* cut a range */
            if (len) {
                size_t k = (size_t)(next() % 16) + 1;
                if (pos + k > len)
                    k = len - pos;
                memmove(out + pos, out + pos + k, len - pos - k);
                len -= k;
            }
            break;
        case 2: /* truncate */
            len = pos;
            break;
        case 3: { /* splice a token */
            const char *t = tokens[next() % (sizeof tokens / sizeof tokens[0])];
            size_t k = strlen(t);
            if (len + k <= cap) {
                memmove(out + pos + k, out + pos, len - pos);
                memcpy(out + pos, t, k);
                len += k;
            }
            break;
        }
        default: { /* duplicate a range */
            size_t k = (size_t)(next() % 32) + 1;
            if (pos + k <= len && len + k <= cap) {
                memmove(out + pos + k, out + pos, len - pos);
                len += k;
            }
            break;
        }
        }
    }
    return len;
}

int main(int argc, char **argv)
{
    signal(SIGABRT, on_crash);
    signal(SIGSEGV, on_crash);
    long mutations = 2000;
    long inputs = 0;
    int first = 1;
    if (argc > 2 && !strcmp(argv[1], "--mutations")) {
        mutations = atol(argv[2]);
        first = 3;
    }
    for (int a = first; a < argc; a++) {
        DIR *dir = opendir(argv[a]);
        if (!dir) {
            fprintf(stderr, "mutate: cannot open %s\n", argv[a]);
            return 2;
        }
        struct dirent *de;
        while ((de = readdir(dir))) {
            if (de->d_name[0] == '.')
                continue;
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[a], de->d_name);
            FILE *f = fopen(path, "rb");
            if (!f)
                continue;
            uint8_t *buf = malloc(1 << 20);
            size_t n = fread(buf, 1, 1 << 20, f);
            fclose(f);
            run(buf, n);
            inputs++;
            uint8_t *m = malloc((1 << 20) + 4096);
            for (long i = 0; i < mutations; i++) {
                size_t k = mutate(buf, n, m, (1 << 20) + 4096);
                run(m, k);
                inputs++;
            }
            free(m);
            free(buf);
        }
        closedir(dir);
    }
    printf("mutate: %ld inputs, no failure\n", inputs);
    return inputs ? 0 : 2;
}
