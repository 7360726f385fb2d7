/*
 * solve.h - `lcnd solve`: the one-shot mode of the daemon binary. Reads one
 * graph file, runs an engine under a budget with live progress on stderr,
 * prints a JSON summary on stdout and writes the best layout (revalidated by
 * the oracle first) in the input format.
 */
#ifndef LCN_SOLVE_H
#define LCN_SOLVE_H

/* argv[0] is "solve". Returns the process exit status: 0 success, 1 failure
 * at run time, 2 usage or input error. */
int solve_main(int argc, char **argv);

#endif
