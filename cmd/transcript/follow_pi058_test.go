package main

import "testing"

// TestFollowPi058_KilledAtRandom is TestFollowPi16_KilledAtRandom with Pi 0.58
// (@mariozechner/pi-coding-agent), which many users still run, as the writer:
// its SessionManager writes several sessions at once (a long one, branches,
// compactions, labels, a version 1 file it migrates in place, a branch
// extracted into a new file, a session forked into another cwd) while
// `transcript follow` uploads them to MinIO and is killed with SIGKILL at
// random moments and started again. The bucket must hold every entry of Pi's
// files exactly once, byte for byte, `restore --layout pi` must give the same
// files, and Pi 0.58 must list, resume and open them as the originals (and Pi
// 1.6 open them alike). TRANSCRIPT_FOLLOW_SEED repeats a run.
func TestFollowPi058_KilledAtRandom(t *testing.T) {
	node := needPiPackage(t, "@mariozechner/pi-coding-agent")
	needPiPackage(t, "@earendil-works/pi-coding-agent")
	run := followKilledAtRandom(t, node, killedRun{script: "pi058-follow.mjs", args: []string{"8"}, stream: 58,
		minKills: 15, minFiles: 9, filesAre: "six sessions, the migrated one, the branch and the fork"})
	requirePiAgrees(t, node, "pi058-follow.mjs", run.root, run.restored, len(run.files), 6)
}
