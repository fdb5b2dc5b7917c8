// Package protect decides what the program must not replace in a run's
// writable trees and what it must not see: the protected entries (.git,
// .envrc, the home's rc files, ...: [ProtectedNames]) found by a bounded
// walk of the writable trees, with the directories above them pinned; the
// extra read-only paths of a settings file (denyWrite); and the masks
// (--mask) with every other name (hard link) of a masked file. It works
// on resolved host paths ([Mounts]) and is called with the invoking
// user's rights; [Protection.Verify] checks, once the sandbox's mounts are
// in place, that each entry is still the file the walk found.
package protect
