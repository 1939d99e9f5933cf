package follow

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Machine names the machine a follower runs on, as its state file records
// it. Each field is "" when it cannot be told.
type Machine struct {
	// Host is the host name.
	Host string
	// ID stands for the machine's id (/etc/machine-id): a keyed hash of it,
	// as machine-id(5) asks of an application that needs a stable id of the
	// machine (the id itself is confidential).
	ID string
}

// machineIDFiles are where the machine id is read from, the first readable.
var machineIDFiles = []string{"/etc/machine-id", "/var/lib/dbus/machine-id"}

// machineIDKey is the application-specific key of the machine id's hash.
const machineIDKey = "transcriptstore follow: machine"

// ThisMachine returns the machine the process runs on: its host name and
// the keyed hash of its machine id, each "" when it cannot be read. It is
// Config.Machine's default.
func ThisMachine() Machine {
	var m Machine
	if h, err := os.Hostname(); err == nil {
		m.Host = h
	}
	for _, p := range machineIDFiles {
		if data, err := os.ReadFile(p); err == nil {
			if id := bytes.TrimSpace(data); len(id) > 0 {
				mac := hmac.New(sha256.New, []byte(machineIDKey))
				mac.Write(id)
				m.ID = hex.EncodeToString(mac.Sum(nil)[:16])
				break
			}
		}
	}
	return m
}

// place is where a follower's state lives: the machine and the state
// directory (its absolute path, symbolic links resolved).
type place struct {
	Machine
	stateDir string
}

// placeOf returns the place of cfg's state directory.
func placeOf(cfg Config) place {
	dir := cfg.StateDir
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		dir = r
	}
	return place{Machine: cfg.Machine(), stateDir: dir}
}

// movedFrom says how the place a state file names differs from p ("" when
// it does not, or cannot be told): a state directory copied to another
// machine (a home directory synchronised, a VM image cloned) or moved. A
// field either side does not know does not count.
func (p place) movedFrom(doc *stateDoc) string {
	var why []string
	differ := func(was, is string) bool { return was != "" && is != "" && was != is }
	if differ(doc.Host, p.Host) {
		why = append(why, fmt.Sprintf("host %q, not %q", doc.Host, p.Host))
	}
	if differ(doc.Machine, p.ID) {
		why = append(why, "another machine id")
	}
	if differ(doc.StateDir, p.stateDir) {
		why = append(why, fmt.Sprintf("state directory %s, not %s", doc.StateDir, p.stateDir))
	}
	return strings.Join(why, ", ")
}
