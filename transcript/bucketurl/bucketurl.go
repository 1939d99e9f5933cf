// Package bucketurl opens a bucket.Bucket from a URL, the one place that maps URL
// schemes to backends:
//
//	mem://                                   a new, empty in-memory bucket
//	file:///abs/dir                          a local directory (created if missing)
//	file://./rel/dir                         a directory relative to the working directory
//	s3://BUCKET/PREFIX?endpoint=HOST:PORT&insecure=true&region=R&create=true&timeout=30s
//
// For s3, credentials come from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, never
// from the URL (a URL with user info is rejected), and endpoint defaults to
// s3.amazonaws.com. Open returns the key prefix within the bucket: the S3 path after
// the bucket name, without leading or trailing "/"; "" for mem and file, whose
// root is the bucket itself. Errors quote URLs only through Redact.
package bucketurl

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/minio/minio-go/v7/pkg/s3utils"

	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/filebucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
	"github.com/transcriptstore/transcript/transcript/bucket/s3bucket"
)

// DefaultS3Endpoint is the endpoint of an s3:// URL without endpoint parameter.
const DefaultS3Endpoint = "s3.amazonaws.com"

// Location is a parsed bucket URL.
type Location struct {
	// Scheme is "mem", "file" or "s3".
	Scheme string
	// Dir is the absolute directory of a file URL.
	Dir string
	// S3 configures an s3 URL (credentials are left empty: s3bucket reads them
	// from the environment).
	S3 s3bucket.Config
	// Prefix is the key prefix within the bucket ("" for mem and file).
	Prefix string
}

// Open parses rawURL and opens its bucket (see the package doc for the forms).
func Open(ctx context.Context, rawURL string) (bucket.Bucket, string, error) {
	loc, err := Parse(rawURL)
	if err != nil {
		return nil, "", err
	}
	switch loc.Scheme {
	case "mem":
		return membucket.New(), "", nil
	case "file":
		b, err := filebucket.New(loc.Dir)
		if err != nil {
			return nil, "", fmt.Errorf("open %s: %w", Redact(rawURL), err)
		}
		return b, "", nil
	default: // "s3"
		b, err := s3bucket.New(ctx, loc.S3)
		if err != nil {
			return nil, "", fmt.Errorf("open %s: %w", Redact(rawURL), err)
		}
		return b, loc.Prefix, nil
	}
}

// Parse checks rawURL and returns what it names, without opening anything.
func Parse(rawURL string) (Location, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return Location{}, fmt.Errorf("bucket url %s: malformed", Redact(rawURL))
	}
	fail := func(format string, args ...any) (Location, error) {
		return Location{}, fmt.Errorf("bucket url %s: %s", Redact(rawURL), fmt.Sprintf(format, args...))
	}
	if u.User != nil {
		return fail("credentials in the URL are not accepted; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
	}
	if u.Fragment != "" {
		return fail("unexpected fragment")
	}
	switch u.Scheme {
	case "mem":
		if u.Host != "" || strings.Trim(u.Path, "/") != "" || u.Opaque != "" || u.RawQuery != "" {
			return fail("mem takes no host, path or parameters (use mem://)")
		}
		return Location{Scheme: "mem"}, nil
	case "file":
		if u.RawQuery != "" {
			return fail("file takes no parameters")
		}
		dir, err := fileDir(u)
		if err != nil {
			return fail("%v", err)
		}
		return Location{Scheme: "file", Dir: dir}, nil
	case "s3":
		return parseS3(u, fail)
	case "":
		return fail("no scheme (use mem://, file:///dir or s3://bucket/prefix)")
	default:
		return fail("unknown scheme %q (use mem, file or s3)", u.Scheme)
	}
}

// fileDir returns the directory of a file URL: file:///abs, file://localhost/abs,
// or file://./rel and file://../rel relative to the working directory.
func fileDir(u *url.URL) (string, error) {
	if u.Opaque != "" {
		return "", errors.New("use file:///abs/dir or file://./rel/dir")
	}
	switch u.Host {
	case "", "localhost":
		if u.Path == "" {
			return "", errors.New("empty directory")
		}
		return filepath.Clean(filepath.FromSlash(u.Path)), nil
	case ".", "..":
		return filepath.Abs(filepath.FromSlash(u.Host + u.Path))
	default:
		return "", fmt.Errorf("remote host %q is not supported (use file:///abs/dir or file://./rel/dir)", u.Host)
	}
}

func parseS3(u *url.URL, fail func(string, ...any) (Location, error)) (Location, error) {
	cfg := s3bucket.Config{Bucket: u.Host, Endpoint: DefaultS3Endpoint}
	if cfg.Bucket == "" {
		return fail("no bucket (use s3://bucket/prefix)")
	}
	prefix := strings.Trim(u.Path, "/")
	if err := bucket.ValidatePrefix(prefix); err != nil {
		return fail("bad prefix: %v", err)
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return fail("malformed parameters")
	}
	for name, values := range q {
		if len(values) != 1 {
			return fail("parameter %s given %d times", name, len(values))
		}
		v := values[0]
		switch name {
		case "endpoint":
			if v == "" || strings.Contains(v, "/") {
				return fail("endpoint must be host[:port] without scheme")
			}
			cfg.Endpoint = v
		case "region":
			cfg.Region = v
		case "insecure", "create", "check":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return fail("%s must be true or false", name)
			}
			switch name {
			case "insecure":
				cfg.Insecure = b
			case "create":
				cfg.Create = b
			default:
				cfg.NoCheck = !b
			}
		case "timeout":
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return fail("timeout must be a positive duration such as 30s")
			}
			cfg.RequestTimeout = d
		default:
			return fail("unknown parameter %q (known: endpoint, region, insecure, create, check, timeout)", name)
		}
	}
	if cfg.Create && cfg.NoCheck {
		return fail("create=true needs the check that check=false leaves out")
	}
	// A name S3 refuses is the command line's mistake, said before any request.
	if err := s3utils.CheckValidBucketName(cfg.Bucket); err != nil {
		return fail("bucket name %q: %v", cfg.Bucket, err)
	}
	return Location{Scheme: "s3", S3: cfg, Prefix: prefix}, nil
}

// Redact returns rawURL fit for logs: user info is dropped and the values of query
// parameters that look like secrets are replaced. An unparsable URL gives only its
// scheme.
func Redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		if i := strings.Index(rawURL, "://"); i > 0 && i < 16 {
			return rawURL[:i] + "://REDACTED"
		}
		return "REDACTED"
	}
	u.User = nil
	// The parameters keep their order and spelling (endpoint=127.0.0.1:9000 stays
	// readable); only the values of secret-looking ones are replaced.
	params := strings.Split(u.RawQuery, "&")
	for i, p := range params {
		rawName, _, _ := strings.Cut(p, "=")
		name, err := url.QueryUnescape(rawName)
		if err != nil {
			name = rawName
		}
		lower := strings.ToLower(name)
		for _, word := range []string{"secret", "key", "token", "password", "credential", "signature"} {
			if strings.Contains(lower, word) {
				params[i] = rawName + "=REDACTED"
				break
			}
		}
	}
	u.RawQuery = strings.Join(params, "&")
	return u.String()
}
