package cli

import (
	"fmt"
	"path"
	"runtime/debug"
	"strings"
)

// VersionFlag is the flag every command of every binary takes to print its
// version (see Version) and exit 0.
const VersionFlag = "version"

// Version returns the line --version prints: the binary's name, the module
// version, the commit it was built from and the Go version, as the build recorded
// them (runtime/debug.ReadBuildInfo). A build outside a git checkout, or with
// -buildvcs=false, records no commit: it says "commit unknown". Example:
//
//	transcript v0.3.1, commit 00ab684c1f2e (2026-11-30T23:23:00Z), go1.26.8
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown version (no build information)"
	}
	return versionOf(bi)
}

// versionOf formats bi as Version does.
func versionOf(bi *debug.BuildInfo) string {
	name := strings.TrimSuffix(path.Base(bi.Path), ".test")
	version := bi.Main.Version
	if version == "" {
		version = "(devel)"
	}
	var commit, when string
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			commit = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	switch {
	case commit == "":
		commit = "commit unknown"
	default:
		commit = "commit " + commit[:min(12, len(commit))]
		if modified {
			commit += " with local changes"
		}
	}
	if when != "" {
		commit += " (" + when + ")"
	}
	return fmt.Sprintf("%s %s, %s, %s", name, version, commit, bi.GoVersion)
}
