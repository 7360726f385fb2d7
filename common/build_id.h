/*
 * build_id.h - the commit a binary was built from.
 *
 * lcn_build_commit is generated at every build (cmake/build_id.cmake): the
 * source tree's short commit, "-dirty" appended when tracked files differed
 * from it, "unknown" outside a git checkout. Link lcn_build_id to use it.
 */
#ifndef LCN_BUILD_ID_H
#define LCN_BUILD_ID_H

extern const char lcn_build_commit[];

#endif
