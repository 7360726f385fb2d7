/*
 * fileio.h - replacing a whole file so that a reader sees either the old
 * contents or the new ones, never a mix, and the new ones survive a crash
 * once the call has returned.
 *
 * This is the one place lcn writes a final file (layouts, pictures, bench
 * manifests, the daemon's port file); nothing else opens a file for writing
 * and renames it.
 */
#ifndef LCN_FILEIO_H
#define LCN_FILEIO_H

#include <stddef.h>

/* Replaces the file at path with the len bytes at data (data may be NULL
 * when len is 0). The bytes go to a new temporary file next to path (same
 * directory, named "<path>.tmp.<pid>.<n>"), which is written in full
 * (short writes and EINTR are retried), fsync'ed, closed, renamed over path,
 * and then the directory itself is fsync'ed so that the rename is durable.
 *
 * A new file gets the mode fopen would give it (0666 less the umask); an
 * existing regular file keeps its rwx permission bits (not its owner, nor
 * setuid, setgid or sticky). A symbolic link at path is replaced by the
 * file, not followed. What is neither a regular file nor a directory (a
 * device, a FIFO, a socket, a terminal; /dev/null, /dev/stdout when it
 * names a pipe or a terminal) is written in place instead, without a
 * temporary file: a rename over it replaced the node itself (run as root,
 * `--out /dev/null` turned /dev/null into a regular file). So is a name of
 * an open descriptor (/dev/stdout, /dev/fd/N, /proc/self/fd/N: a path in
 * /proc or /dev/fd, or a symbolic link into /proc), whatever it is open
 * on: one of this process's own descriptors (/dev/stdout) is written
 * through that descriptor at its offset, as a write to stdout would be, so
 * `-o /dev/stdout > file` fills the file and leaves /dev/stdout a link.
 *
 * Returns 0 on success. On failure (an empty path included) returns LCN_EIO,
 * writes a lower-case message naming the path and the system's
 * reason into err (when err is not NULL and errlen > 0), and leaves no
 * temporary file behind: path is then either untouched or, when only the
 * directory sync failed, already holds the new contents. Safe to call from
 * several threads at once (for different paths). */
int lcn_write_atomic(const char *path, const void *data, size_t len, char *err, size_t errlen);

#endif
