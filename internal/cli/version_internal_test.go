package cli

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestVersionOf(t *testing.T) {
	settings := func(kv ...string) []debug.BuildSetting {
		var out []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			out = append(out, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return out
	}
	tests := []struct {
		name string
		bi   debug.BuildInfo
		want string
	}{
		{"release with commit",
			debug.BuildInfo{GoVersion: "go1.26.8", Path: "github.com/transcriptstore/transcript/cmd/transcript",
				Main:     debug.Module{Version: "v0.3.1"},
				Settings: settings("vcs.revision", "00ab684c1f2e9d8b7a6c", "vcs.time", "2026-11-30T23:23:00Z", "vcs.modified", "false")},
			"transcript v0.3.1, commit 00ab684c1f2e (2026-11-30T23:23:00Z), go1.26.8"},
		{"local changes",
			debug.BuildInfo{GoVersion: "go1.26.8", Path: "github.com/transcriptstore/transcript/cmd/transcript-serve",
				Main:     debug.Module{Version: "(devel)"},
				Settings: settings("vcs.revision", "abc", "vcs.modified", "true")},
			"transcript-serve (devel), commit abc with local changes, go1.26.8"},
		{"no vcs, a test binary",
			debug.BuildInfo{GoVersion: "go1.26.8", Path: "github.com/transcriptstore/transcript/cmd/transcript-compact.test"},
			"transcript-compact (devel), commit unknown, go1.26.8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, versionOf(&tt.bi))
		})
	}
}

func TestCount(t *testing.T) {
	tests := []struct {
		n    int
		noun string
		want string
	}{
		{0, "session", "0 sessions"},
		{1, "session", "1 session"},
		{2, "entry", "2 entries"},
		{1, "entry", "1 entry"},
		{3, "key", "3 keys"},
		{2, "session header", "2 session headers"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, Count(tt.n, tt.noun))
	}
}
