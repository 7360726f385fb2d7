/* lcnd: the solver daemon binary. The first argument names a subcommand. */
#include <stdio.h>
#include <string.h>

#include "build_id.h"
#include "server/lcnd.h"
#include "server/solve.h"

#ifndef LCN_VERSION
#define LCN_VERSION "unknown"
#endif

struct lcnd_cmd {
    const char *name;
    int (*run)(int argc, char **argv); /* argv[0] is the subcommand's name */
    const char *help;
};

/* Every subcommand, in the order `lcnd --help` lists them. */
static const struct lcnd_cmd cmds[] = {
    {"serve", lcnd_serve_main, "run the solving service: HTTP/JSON API, job store, workers"},
    {"solve", solve_main, "solve one graph file under a time budget and exit"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: lcnd [--help] [--version] COMMAND [ARGS...]\n\n"
               "The lcn solver daemon (local crossing number).\n\ncommands:\n");
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
        fprintf(f, "  %-10s %s\n", cmds[i].name, cmds[i].help);
    fprintf(f, "\n`lcnd COMMAND --help` describes a command.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("lcnd %s (%s)\n", LCN_VERSION, lcn_build_commit);
        return 0;
    }
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
        if (strcmp(argv[1], cmds[i].name) == 0)
            return cmds[i].run(argc - 1, argv + 1);
    fprintf(stderr, "lcnd: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
