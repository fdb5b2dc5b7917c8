// Package invoker says whom sbx acts for: the user who ran it (under sudo,
// SUDO_UID's user), or, for a run root starts without sudo, the owner of
// the workspace. Every host file operation on a path the sandbox could
// write runs with this user's rights ([User.Cred]).
package invoker
