// Package policysrc decides how far sbx trusts a policy input (the config
// file, a settings file) and resolves the paths such a file names by what
// they are, never by their names.
//
// The rule, one for every input: a file that a sandbox could have written
// may only tighten. That is a file
//
//   - inside a tree a sandbox of this run may write, or the workspace
//     (writable in some run or other: an agent runs with --write), or an
//     sbx home ([Checker.Roots]);
//   - inside a tree an earlier or concurrent run was granted, changed
//     (ctime) while that grant lasted ([Grant], kept in the state
//     directory by [Record]);
//   - writable by someone other than the invoking user: the file, or a
//     directory of its chain, owned by another user than the invoking one
//     or root, or group- or other-writable (a directory with the sticky
//     bit excepted).
//
// The chain is walked by file descriptor from the directory the file was
// opened in, up to "/" (openat ".."), and compared by device and inode,
// so that a symlink or a bind mount that gives the file another name does
// not change the answer.
//
// "Tighten" for paths is [Covered]: the later path is opened as the
// invoking user (the caller runs it with hostfs.Cred.Do) from "/" with no
// symlink followed at any component, and it is covered when one of the
// directories of its chain is one of the earlier writable roots.
package policysrc
