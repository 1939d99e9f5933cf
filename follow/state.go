package follow

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/transcriptstore/transcript/internal/fsutil"
	"github.com/transcriptstore/transcript/transcript"
)

// The files of Config.StateDir.
const (
	StateFileName = "state.json"
	LockFileName  = "state.lock"
)

// stateFormat is the version of the state file's layout.
const stateFormat = 1

// stateDoc is the state file: what the follower handed over of each file.
//
//	{"format":1,"root":"/home/u/.pi/agent/sessions","files":{
//	  "--home-u-proj--/2026-..._0195f0c1-....jsonl":
//	    {"ns":"default","agent":"--home-u-proj--","session":"0195f0c1-...",
//	     "inode":1839, "offset":18231, "sum":"9f86d081884c7d65", "uploading":19044}}}
//
// offset is the bytes of complete lines handed over (or skipped); sum is the
// xxhash64 of the file's first offset bytes; uploading, when set, is an intent:
// the lines up to there were being handed over when the state was written, so
// the next start reconciles them against the store and the uploader before it
// hands any over again; reconcile says that a reconcile of the lines past
// offset was in progress (a file read in several batches), to go on with;
// audit, that the store lost the follower's marker and the file's next read
// asks whether the store still holds the session. follower is the follower's
// id, the name of its marker object in the store (marker.go); marked says that
// the store held the marker when the state was written, in namespace
// markedIn (Config.Namespace then: the marker of another namespace says
// nothing of this one's); lostAt, when the
// store lost the marker lately (or a session since), and auditedAt, when
// every file was last asked about since (marker.go). host, machine (a keyed
// hash of the machine id) and stateDir say where the state was written
// (identity.go): a state found elsewhere was copied, and the follower takes
// a new id.
type stateDoc struct {
	Format    int                   `json:"format"`
	Root      string                `json:"root"`
	Follower  string                `json:"follower,omitempty"`
	Host      string                `json:"host,omitempty"`
	Machine   string                `json:"machine,omitempty"`
	StateDir  string                `json:"stateDir,omitempty"`
	Marked    bool                  `json:"marked,omitempty"`
	MarkedIn  string                `json:"markedIn,omitempty"`
	LostAt    time.Time             `json:"lostAt,omitzero"`
	AuditedAt time.Time             `json:"auditedAt,omitzero"`
	NoBucket  bool                  `json:"noBucket,omitempty"`
	Files     map[string]*fileState `json:"files"`
}

// fileState is what the state file says of one file.
type fileState struct {
	Namespace string `json:"ns"`
	Agent     string `json:"agent"`
	Session   string `json:"session"`
	Inode     uint64 `json:"inode"`
	Offset    int64  `json:"offset"`
	Sum       string `json:"sum"`
	Uploading int64  `json:"uploading,omitempty"`
	Reconcile bool   `json:"reconcile,omitempty"`
	Audit     bool   `json:"audit,omitempty"`
	Retiring  bool   `json:"retiring,omitempty"`
}

func (s *fileState) ref() transcript.TranscriptRef {
	return transcript.TranscriptRef{Namespace: s.Namespace, AgentID: s.Agent, SessionID: s.Session}
}

// errCorruptState is wrapped when the state file cannot be read as a state.
var errCorruptState = errors.New("corrupt state file")

// readState reads the state file at path: none yields an empty state. A file
// that does not parse, or is of another format, is errCorruptState.
func readState(path string) (*stateDoc, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &stateDoc{Format: stateFormat, Files: map[string]*fileState{}}, nil
	}
	if err != nil {
		return nil, err
	}
	var doc stateDoc
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%w %s: %w", errCorruptState, path, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w %s: data after the state", errCorruptState, path)
	}
	if doc.Format != stateFormat {
		return nil, fmt.Errorf("%w %s: format %d, want %d", errCorruptState, path, doc.Format, stateFormat)
	}
	if doc.Files == nil {
		doc.Files = map[string]*fileState{}
	}
	if doc.Follower != "" && transcript.ValidateWriterID(doc.Follower) != nil {
		return nil, fmt.Errorf("%w %s: follower id %q", errCorruptState, path, doc.Follower)
	}
	for rel, fst := range doc.Files {
		if fst == nil || fst.Offset < 0 || fst.Uploading < 0 || fst.ref().Validate() != nil ||
			!filepath.IsLocal(filepath.FromSlash(rel)) {
			return nil, fmt.Errorf("%w %s: entry %q", errCorruptState, path, rel)
		}
	}
	return &doc, nil
}

// moveAside renames a corrupt state file out of the way (kept for an operator)
// and returns its new name.
func moveAside(path string, now string) (string, error) {
	aside := path + ".corrupt-" + strings.NewReplacer(":", "", "-", "").Replace(now)
	if err := os.Rename(path, aside); err != nil {
		return "", err
	}
	return aside, nil
}

// writeState replaces the state file at path atomically (temp file, fsync,
// rename, fsync of the directory unless noSync).
func writeState(path string, doc *stateDoc, noSync bool) error {
	data, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	data = append(data, '\n')
	return fsutil.WriteFileAtomic(path, noSync, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}
