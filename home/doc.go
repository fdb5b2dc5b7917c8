// Package home keeps the sbx homes: the throwaway homes of --home tmp,
// registered under the state dir by a lock their run holds so that a later
// run can sweep those whose run is gone ([SweepTmp]), and the repair of a
// persistent sbx home that an earlier run as root left entries in
// ([Repair]), and the mount points a run's binds need in the home, made
// and removed as the user without following a symlink
// ([MakeMountPoints]).
package home
