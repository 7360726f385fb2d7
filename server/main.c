/* lcnd: the solving daemon. Subcommands are a table; `lcnd serve` runs the
 * HTTP daemon (serve.c). */
#include <stdio.h>
#include <string.h>

#include "lcnd.h"

struct subcommand {
    const char *name;
    int (*main)(int argc, char **argv);
    const char *help;
};

static const struct subcommand subcommands[] = {
    {"serve", lcnd_serve_main, "run the HTTP/JSON solving daemon (lcnd serve --help)"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: lcnd <command> [options]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++)
        fprintf(f, "  %-8s %s\n", subcommands[i].name, subcommands[i].help);
}

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("lcnd %s\n", LCND_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++)
        if (!strcmp(argv[1], subcommands[i].name))
            return subcommands[i].main(argc - 1, argv + 1);
    fprintf(stderr, "lcnd: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
