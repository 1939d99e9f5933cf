package transcript

import (
	"time"

	"github.com/transcriptstore/transcript/pi"
)

// Summary is what a list of sessions shows of one session, kept with the session
// so that a list reads one small object per session instead of the session: a
// strict session's head carries it (updated by every append in the conditional
// write that moves the head), and a default-mode session may have a summary object
// (SummaryName) that caches it. The store does not compute it, since it does not
// read what entries mean: the writer of the head or of the summary object does
// (package repository, by Pi's rules).
type Summary struct {
	// Created is the session header's timestamp (zero if unknown).
	Created time.Time
	// Updated is the key time of the newest level-0 segment that an entry of the
	// session was first stored in: the last append (a compaction does not change
	// it).
	Updated time.Time
	// Cwd and ParentSession are the header's working directory and parent session.
	Cwd, ParentSession string
	// Name is the session's name ("" for none).
	Name string
	// Entries counts the entries, the header excluded.
	Entries int
}

// summaryJSON is the stored form of a Summary, in a head and in a summary object.
type summaryJSON struct {
	Created       *time.Time  `json:"created,omitempty"`
	Updated       *time.Time  `json:"updated,omitempty"`
	Cwd           pi.JSString `json:"cwd,omitempty"`
	ParentSession pi.JSString `json:"parentSession,omitempty"`
	Name          pi.JSString `json:"name,omitempty"`
	Entries       int         `json:"entries"`
}

func (s *Summary) toJSON() *summaryJSON {
	if s == nil {
		return nil
	}
	return &summaryJSON{Created: timeOrNil(s.Created), Updated: timeOrNil(s.Updated), Cwd: pi.JSString(s.Cwd),
		ParentSession: pi.JSString(s.ParentSession), Name: pi.JSString(s.Name), Entries: s.Entries}
}

func (j *summaryJSON) summary() *Summary {
	if j == nil {
		return nil
	}
	s := &Summary{Cwd: string(j.Cwd), ParentSession: string(j.ParentSession), Name: string(j.Name), Entries: j.Entries}
	if j.Created != nil {
		s.Created = j.Created.UTC()
	}
	if j.Updated != nil {
		s.Updated = j.Updated.UTC()
	}
	return s
}

func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}
