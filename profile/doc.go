// Package profile holds sbx run's profiles: named, partial sets of run
// options (allowed hosts, environment, extra paths, masks, limits, home,
// network) that fit a program, typically a coding agent, so that
// "sbx run -- claude" needs no flags.
//
// A [Profile] is a plain value; this package does no I/O. Layers merge in
// one order (see [Merge]): built-in defaults, then the config file's
// defaults, then the profile, then the command line. Lists add up, a
// scalar set by a later layer replaces an earlier one. [Profile.Flags]
// renders a profile as the sbx run flags it stands for, so that what a
// profile does is never hidden ("sbx profile show NAME").
//
// Paths may start with "~/", the invoking user's home (under sudo, the
// home of SUDO_UID); the caller expands them ([Profile.Expand]).
package profile
