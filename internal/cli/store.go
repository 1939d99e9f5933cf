package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/s3bucket"
	"github.com/transcriptstore/transcript/transcript/bucketurl"
)

// StoreEnv names the environment variable that sets the default of --store.
const StoreEnv = "TRANSCRIPT_STORE"

// DefaultStoreURL is the store used without --store and $TRANSCRIPT_STORE: a
// directory beside the caller, laid out like a bucket.
const DefaultStoreURL = "file://./transcripts"

// StoreHelp is the help line of --store.
const StoreHelp = "store `URL`: file:///DIR, file://./DIR, s3://BUCKET/PREFIX?endpoint=HOST:PORT&insecure=true&timeout=5s or mem:// (env " + StoreEnv + ")"

// StoreFlags are the flags that name a store and what in it: --store, --ns,
// --agent, --session.
type StoreFlags struct {
	URL       string
	Namespace string
	Agent     string
	Session   string
}

// Register adds --store (default $TRANSCRIPT_STORE, else DefaultStoreURL), --ns
// (default ns, described by nsHelp), --agent and --session to fs.
func (f *StoreFlags) Register(fs *pflag.FlagSet, getenv func(string) string, ns, nsHelp string) {
	f.RegisterStore(fs, getenv)
	fs.StringVar(&f.Namespace, "ns", ns, nsHelp)
	fs.StringVar(&f.Agent, "agent", "", "agent `ID`")
	fs.StringVar(&f.Session, "session", "", "session `ID`")
}

// RegisterStore adds --store alone (default $TRANSCRIPT_STORE, else
// DefaultStoreURL) to fs: for a command that works in every namespace of its
// store, such as transcript-serve.
func (f *StoreFlags) RegisterStore(fs *pflag.FlagSet, getenv func(string) string) {
	def := getenv(StoreEnv)
	if def == "" {
		def = DefaultStoreURL
	}
	fs.StringVar(&f.URL, "store", def, StoreHelp)
}

// Validate checks --ns, --agent and --session that are set: a bad one (a path
// traversal, a slash) is a usage error.
func (f *StoreFlags) Validate(cmd string) error {
	for _, p := range []struct{ flag, v string }{{"ns", f.Namespace}, {"agent", f.Agent}, {"session", f.Session}} {
		if p.v == "" {
			continue
		}
		if err := transcript.ValidatePart(p.flag, p.v); err != nil {
			return Usagef("%s: --%s %q: %v", cmd, p.flag, p.v, err)
		}
	}
	return nil
}

// GlobalValueFlags are the store flags that take a value; with --json they may
// stand before a command's name (see SplitCommand).
var GlobalValueFlags = []string{"store", "ns", "agent", "session"}

// Access says whether a command may create its store.
type Access int

const (
	// ReadOnly commands never create anything: a file store whose directory is
	// missing is "not found".
	ReadOnly Access = iota
	// ReadWrite commands create a file store's directory when it is missing.
	ReadWrite
)

// OpenStore opens the store at rawURL, bound to namespace ns. A malformed URL or an
// unknown scheme is a usage error. A store that does not exist (a file store's
// directory, an S3 bucket) is an error wrapping bucket.ErrNotFound that names
// it; with ReadOnly nothing is created (an S3 URL's create=true is ignored), with
// ReadWrite a directory is created and a bucket when the URL says create=true (the
// error for a missing bucket says so).
func OpenStore(ctx context.Context, rawURL, ns string, access Access) (*transcript.Store, error) {
	return OpenStoreWrapped(ctx, rawURL, ns, access, nil)
}

// OpenStoreWrapped is OpenStore with the bucket passed through wrap (when not
// nil) before the store is built on it; backend is the URL's scheme ("s3",
// "file", "mem"). transcript-serve wraps it with its bucket metrics.
func OpenStoreWrapped(ctx context.Context, rawURL, ns string, access Access, wrap func(b bucket.Bucket, backend string) bucket.Bucket) (*transcript.Store, error) {
	loc, err := bucketurl.Parse(rawURL)
	if err != nil {
		return nil, &UsageError{Msg: "--store: " + err.Error()}
	}
	redacted := bucketurl.Redact(rawURL)
	var (
		b      bucket.Bucket
		prefix string
	)
	switch {
	case loc.Scheme == "s3":
		cfg := loc.S3
		if access == ReadOnly {
			// create=true asks to make a missing bucket, which a command that only
			// reads never does: a missing bucket is "not found".
			cfg.Create = false
		}
		sb, err := s3bucket.New(ctx, cfg)
		switch {
		case errors.Is(err, s3bucket.ErrNoBucket):
			nf := &NotFoundError{What: fmt.Sprintf("store %s: bucket %q", redacted, cfg.Bucket)}
			if access == ReadWrite {
				nf.Hint = "add create=true to the store URL to make it"
			}
			return nil, nf
		case err != nil:
			return nil, fmt.Errorf("store %s: %w", redacted, err)
		}
		b, prefix = sb, loc.Prefix
	case loc.Scheme == "file" && access == ReadOnly:
		fi, err := os.Stat(loc.Dir)
		switch {
		case errors.Is(err, os.ErrNotExist):
			return nil, &StoreNotFoundError{URL: redacted, Dir: loc.Dir}
		case err != nil:
			return nil, fmt.Errorf("store %s: %w", redacted, err)
		case !fi.IsDir():
			return nil, fmt.Errorf("store %s: %s is not a directory", redacted, loc.Dir)
		}
		fallthrough
	default:
		if b, prefix, err = bucketurl.Open(ctx, rawURL); err != nil {
			return nil, err
		}
	}
	if wrap != nil {
		b = wrap(b, loc.Scheme)
	}
	return transcript.New(transcript.Config{Bucket: b, Prefix: prefix, Namespace: ns})
}

// StoreNotFoundError reports a file store whose directory does not exist; it wraps
// bucket.ErrNotFound.
type StoreNotFoundError struct {
	URL string // the store URL, redacted
	Dir string // the absolute directory it names
}

func (e *StoreNotFoundError) Error() string {
	return fmt.Sprintf("store %s not found: no directory %s", e.URL, e.Dir)
}

// Unwrap returns bucket.ErrNotFound.
func (e *StoreNotFoundError) Unwrap() error { return bucket.ErrNotFound }

// SplitCommand returns the command word of args and its arguments. Flags standing
// before the command (transcript --store URL ls) are moved after it, so that every
// command's own parser sees them: valueFlags take a value (--store URL or
// --store=URL), boolFlags do not. An unknown flag before the command is a usage
// error that suggests the nearest. cmd is "" when args hold no command.
func SplitCommand(args, valueFlags, boolFlags []string) (cmd string, rest []string, err error) {
	var lead []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || !strings.HasPrefix(a, "-") || a == "-" {
			if a == "--" {
				i++
			}
			if i >= len(args) {
				break
			}
			return args[i], append(lead, args[i+1:]...), nil
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch {
		case slices.Contains(valueFlags, name):
			lead = append(lead, a)
			if !hasValue {
				if i+1 >= len(args) {
					return "", nil, Usagef("flag --%s needs a value", name)
				}
				i++
				lead = append(lead, args[i])
			}
		case slices.Contains(boolFlags, name):
			lead = append(lead, a)
		default:
			known := make([]string, 0, len(valueFlags)+len(boolFlags))
			for _, k := range append(append([]string{}, valueFlags...), boolFlags...) {
				known = append(known, "--"+k)
			}
			msg := fmt.Sprintf("unknown flag %s before the command", a)
			if s := Suggest("--"+name, known); s != "" {
				msg += fmt.Sprintf(" (did you mean %s?)", s)
			}
			return "", nil, Usagef("%s", msg)
		}
	}
	return "", lead, nil
}
