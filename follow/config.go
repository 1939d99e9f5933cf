package follow

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/transcriptstore/transcript/transcript"
)

// Defaults of the Config fields whose zero value means "use the default".
const (
	DefaultBatchInterval  = 200 * time.Millisecond
	DefaultRescanInterval = 10 * time.Second
	DefaultStuckAfter     = time.Minute
	DefaultDrainTimeout   = 10 * time.Second
	DefaultMaxBatchBytes  = 32 << 20
	DefaultParallel       = 16
)

// Config configures a Follower. Root, StateDir, Uploader and Store are required;
// every other field has a documented default for its zero value.
type Config struct {
	// Root is the directory followed, recursively: Pi's sessions root
	// (DefaultRoot). Hidden files and directories (names starting with ".") are
	// never followed.
	Root string
	// StateDir holds the follower's state file (state.json) and its lock
	// (state.lock). It must survive restarts together with the Uploader's own
	// durable state (the command keeps the mirror's outbox in StateDir/outbox),
	// and belongs to one Follower at a time: New locks it.
	StateDir string
	// Uploader receives the lines; Store tells what the bucket holds. Required.
	Uploader Uploader
	Store    Store

	// Namespace of every session (default transcript.DefaultNamespace).
	Namespace string
	// Agent is the agent id of every session; "" (the default) takes it from
	// the name of the directory that holds the file (Pi's "--<cwd>--" folder),
	// mapped by PartName.
	Agent string

	// BatchInterval is how long the lines of a burst are gathered before they
	// are handed over as one segment: the first change of a file schedules its
	// read that much later (default DefaultBatchInterval), or up to a quarter
	// of it earlier when another file's read is due then (one pass over many
	// files writes the state file once, not once per file).
	BatchInterval time.Duration
	// RescanInterval is how often Root is walked to catch what the file-system
	// watch missed, and to report stuck files (default DefaultRescanInterval).
	RescanInterval time.Duration
	// StuckAfter is how long a file may end in an unterminated line, or fail to
	// upload, before it is reported stuck (default DefaultStuckAfter).
	StuckAfter time.Duration
	// DrainTimeout bounds the last read and hand-over when Run's context ends
	// (default DefaultDrainTimeout).
	DrainTimeout time.Duration
	// MaxBatchBytes bounds the bytes read from one file for one segment (default
	// DefaultMaxBatchBytes); a file further behind is read in several.
	MaxBatchBytes int
	// Parallel is how many files are handed over at once (default
	// DefaultParallel): an outbox's group commit lets concurrent hand-overs share
	// one fsync.
	Parallel int
	// NoWatch disables the file-system watch (fsnotify): changes are found by
	// the rescan alone.
	NoWatch bool
	// NoSync skips the fsyncs of the state file (tests and benchmarks only).
	NoSync bool

	// FollowerID, when set, is the follower's id, the name of its marker in
	// the store (a transcript.ValidateWriterID name), instead of the random
	// one made at the first start and kept in the state file. It lets a
	// state directory that does not last (a new one for each Once, in a
	// container) reuse one marker instead of leaving one more each run. Two
	// followers must not share one: only the first to look after an
	// emptying would find it gone.
	FollowerID string
	// Machine names the machine the follower runs on (default ThisMachine).
	// The state file records it with the state directory's path; a state
	// file written on another machine or in another directory (copied with
	// a home directory, a cloned VM image) makes the follower take a new id,
	// so that each copy has a marker of its own (EventCopied).
	Machine func() Machine

	// OnEvent, when set, receives every Event, in order, from the goroutine
	// that runs the follower; it must not block for long.
	OnEvent func(Event)
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// withDefaults validates c and fills in the defaults.
func (c Config) withDefaults() (Config, error) {
	var errs []error
	if c.Root == "" {
		errs = append(errs, errors.New("no root"))
	}
	if c.StateDir == "" {
		errs = append(errs, errors.New("no state directory"))
	}
	if c.Uploader == nil {
		errs = append(errs, errors.New("no uploader"))
	}
	if c.Store == nil {
		errs = append(errs, errors.New("no store"))
	}
	if c.BatchInterval < 0 || c.RescanInterval < 0 || c.StuckAfter < 0 || c.DrainTimeout < 0 ||
		c.MaxBatchBytes < 0 || c.Parallel < 0 {
		errs = append(errs, errors.New("negative bound"))
	}
	if c.Namespace == "" {
		c.Namespace = transcript.DefaultNamespace
	}
	if err := transcript.ValidatePart("namespace", c.Namespace); err != nil {
		errs = append(errs, err)
	}
	if c.Agent != "" {
		if err := transcript.ValidatePart("agent id", c.Agent); err != nil {
			errs = append(errs, err)
		}
	}
	if c.FollowerID != "" {
		if err := transcript.ValidateWriterID(c.FollowerID); err != nil {
			errs = append(errs, fmt.Errorf("follower id: %w", err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return c, fmt.Errorf("follow: config: %w", err)
	}
	var err error
	if c.Root, err = filepath.Abs(c.Root); err != nil {
		return c, fmt.Errorf("follow: root: %w", err)
	}
	if c.StateDir, err = filepath.Abs(c.StateDir); err != nil {
		return c, fmt.Errorf("follow: state directory: %w", err)
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&c.BatchInterval, DefaultBatchInterval)
	def(&c.RescanInterval, DefaultRescanInterval)
	def(&c.StuckAfter, DefaultStuckAfter)
	def(&c.DrainTimeout, DefaultDrainTimeout)
	if c.MaxBatchBytes == 0 {
		c.MaxBatchBytes = DefaultMaxBatchBytes
	}
	if c.Parallel == 0 {
		c.Parallel = DefaultParallel
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Machine == nil {
		c.Machine = ThisMachine
	}
	return c, nil
}

// DefaultRoot returns Pi's sessions root as Pi finds it: the "sessions"
// directory of $PI_CODING_AGENT_DIR when that is set ("~" and "~/..." expanded),
// else ~/.pi/agent/sessions. getenv reads the environment (os.Getenv).
func DefaultRoot(getenv func(string) string) (string, error) {
	home, herr := os.UserHomeDir()
	if dir := getenv("PI_CODING_AGENT_DIR"); dir != "" {
		switch {
		case dir == "~" || len(dir) > 1 && dir[:2] == "~/":
			if herr != nil {
				return "", herr
			}
			dir = filepath.Join(home, dir[1:])
		}
		return filepath.Join(dir, "sessions"), nil
	}
	if herr != nil {
		return "", fmt.Errorf("find Pi's sessions root: %w (name the root)", herr)
	}
	return filepath.Join(home, ".pi", "agent", "sessions"), nil
}
