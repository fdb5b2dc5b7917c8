// Package home keeps the sbx homes: the throwaway homes of --home tmp,
// registered under the state dir by a lock their run holds so that a later
// run can sweep those whose run is gone ([SweepTmp]), and the repair of a
// persistent sbx home that an earlier run as root left entries in
// ([Repair]), and the mount points a run's binds need in the home, made
// and removed as the user without following a symlink
// ([MakeMountPoints]). It also keeps a run's private state dir
// ([RunDir]) and the single --rw files below the home that a run copies
// in and back rather than binds ([RWScope], [CopyBackRW]), with the sweep
// that copies back after a killed run ([SweepRunDirs]).
package home
