// Command transcript-serve serves the transcript store over HTTP: Pi's session
// storage port (create, list, open, read, append with an expected head, fork,
// delete) for runtimes in any language, with the owner of every request taken from
// a verified bearer JWT.
//
// Usage:
//
//	transcript-serve [serve] --store URL --jwt-key-file FILE [--addr :8080]
//	transcript-serve token --tenant T --user U [--ttl 1h] --jwt-key-file FILE
//
// The HS256 key may also come from $TRANSCRIPT_JWT_KEY; an RS256 or Ed25519
// public key (PEM) from --jwt-public-key-file. --trust-headers takes the owner
// from X-Transcript-Tenant and X-Transcript-User instead, for deployments behind an
// authenticating proxy only.
package main

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/transcriptstore/transcript/internal/cli"
	"github.com/transcriptstore/transcript/server"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket/metricbucket"
	"github.com/transcriptstore/transcript/transcript/bucketurl"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	os.Exit(exitCode(err, os.Stderr))
}

const usage = `transcript-serve serves the transcript store over HTTP.

Usage:
  transcript-serve [serve] [flags]      run the server
  transcript-serve token [flags]        print an HS256 token for a test owner
`

// run dispatches the subcommand.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "serve":
			return serve(ctx, args[1:], getenv, stderr)
		case "token":
			return token(args[1:], getenv, stdout, stderr)
		case "help", "-h", "--help":
			fmt.Fprint(stderr, usage)
			return cli.ErrHelp
		}
	}
	return serve(ctx, args, getenv, stderr)
}

func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return cli.ErrHelp
		}
		return cli.Usagef("%s: %v", fs.Name(), err)
	}
	if fs.NArg() > 0 {
		return cli.Usagef("%s: unexpected argument %q", fs.Name(), fs.Arg(0))
	}
	return nil
}

// hmacKey reads the HS256 key from file, or else from $TRANSCRIPT_JWT_KEY.
func hmacKey(file string, getenv func(string) string) ([]byte, error) {
	if file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("jwt key: %w", err)
		}
		return []byte(strings.TrimSpace(string(data))), nil
	}
	if k := getenv("TRANSCRIPT_JWT_KEY"); k != "" {
		return []byte(k), nil
	}
	return nil, nil
}

func token(args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := newFlagSet("token", stderr)
	tenant := fs.String("tenant", "", "owner tenant (required)")
	user := fs.String("user", "", "owner user (required)")
	ttl := fs.Duration("ttl", time.Hour, "token lifetime")
	keyFile := fs.String("jwt-key-file", "", "HS256 key file (default $TRANSCRIPT_JWT_KEY)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *tenant == "" || *user == "" {
		return cli.Usagef("token: --tenant and --user are required")
	}
	key, err := hmacKey(*keyFile, getenv)
	if err != nil {
		return err
	}
	if key == nil {
		return cli.Usagef("token: no key: set --jwt-key-file or $TRANSCRIPT_JWT_KEY")
	}
	tok, err := server.MintToken(key, *tenant, *user, time.Now(), *ttl)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, tok)
	return err
}

// serveFlags are the flags of serve.
type serveFlags struct {
	addr, store, keyFile, pubFile, agent, issuer, audience string
	logFormat                                              string
	trustHeaders                                           bool
	requestTimeout, shutdownTimeout                        time.Duration
	maxBody                                                int64
}

// newServeFlagSet returns the flag set of serve and the flags it fills.
func newServeFlagSet(getenv func(string) string, stderr io.Writer) (*flag.FlagSet, *serveFlags) {
	fs := newFlagSet("serve", stderr)
	var f serveFlags
	fs.StringVar(&f.addr, "addr", ":8080", "listen address")
	fs.StringVar(&f.store, "store", getenv("TRANSCRIPT_STORE"), "store URL (env TRANSCRIPT_STORE), e.g. s3://bucket/prefix?endpoint=host:9000")
	fs.StringVar(&f.keyFile, "jwt-key-file", "", "HS256 key file (default $TRANSCRIPT_JWT_KEY)")
	fs.StringVar(&f.pubFile, "jwt-public-key-file", "", "PEM public key (RSA: RS256, Ed25519: EdDSA)")
	fs.StringVar(&f.issuer, "jwt-issuer", "", "required iss claim")
	fs.StringVar(&f.audience, "jwt-audience", "", "required aud claim")
	fs.BoolVar(&f.trustHeaders, "trust-headers", false, "take the owner from X-Transcript-Tenant/-User (behind an authenticating proxy only)")
	fs.StringVar(&f.agent, "agent", "", "agent id of the sessions (default \"default\")")
	fs.DurationVar(&f.requestTimeout, "request-timeout", server.DefaultRequestTimeout, "time limit of one request")
	fs.DurationVar(&f.shutdownTimeout, "shutdown-timeout", 30*time.Second, "time in-flight requests get on shutdown")
	fs.Int64Var(&f.maxBody, "max-body", server.DefaultMaxBodyBytes, "largest request body, in bytes")
	fs.StringVar(&f.logFormat, "log", "json", "log format: json or text")
	return fs, &f
}

func serve(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	fs, fp := newServeFlagSet(getenv, stderr)
	if err := parse(fs, args); err != nil {
		return err
	}
	f := *fp
	if f.store == "" {
		return cli.Usagef("serve: --store or $TRANSCRIPT_STORE is required")
	}
	var handler slog.Handler = slog.NewJSONHandler(stderr, nil)
	if f.logFormat == "text" {
		handler = slog.NewTextHandler(stderr, nil)
	}
	log := slog.New(handler)
	auth, err := authenticator(f, getenv)
	if err != nil {
		return err
	}
	b, prefix, err := bucketurl.Open(ctx, f.store)
	if err != nil {
		return err
	}
	// The bucket's requests, failures and latency are served on /metrics with the
	// server's own.
	reg := prometheus.NewRegistry()
	bm, err := metricbucket.NewMetrics(reg)
	if err != nil {
		return err
	}
	loc, err := bucketurl.Parse(f.store)
	if err != nil {
		return err
	}
	store, err := transcript.New(transcript.Config{Bucket: bm.Wrap(b, loc.Scheme), Prefix: prefix})
	if err != nil {
		return err
	}
	srv, err := server.New(server.Config{
		Store: store, Auth: auth, Logger: log, AgentID: f.agent, Registry: reg,
		RequestTimeout: f.requestTimeout, MaxBodyBytes: f.maxBody,
	})
	if err != nil {
		return err
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return err
	}
	hs := &http.Server{
		Handler:           srv.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       f.requestTimeout,
		WriteTimeout:      f.requestTimeout + 10*time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(handler, slog.LevelWarn),
	}
	log.Info("listening", slog.String("addr", ln.Addr().String()), slog.String("store", bucketurl.Redact(f.store)))
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	// Shutdown stops accepting and waits for in-flight requests: appends run on a
	// context detached from the connection, so they finish.
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), f.shutdownTimeout)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	log.Info("stopped")
	return nil
}

// authenticator builds the configured authenticator: trusted headers, or JWTs.
func authenticator(f serveFlags, getenv func(string) string) (server.Authenticator, error) {
	if f.trustHeaders {
		return server.HeaderAuth{}, nil
	}
	key, err := hmacKey(f.keyFile, getenv)
	if err != nil {
		return nil, err
	}
	a := &server.JWTAuth{HMACKey: key, Issuer: f.issuer, Audience: f.audience, Leeway: 30 * time.Second}
	if f.pubFile != "" {
		data, err := os.ReadFile(f.pubFile)
		if err != nil {
			return nil, fmt.Errorf("jwt public key: %w", err)
		}
		block, _ := pem.Decode(data)
		if block == nil {
			return nil, fmt.Errorf("jwt public key %s: no PEM block", f.pubFile)
		}
		if a.PublicKey, err = x509.ParsePKIXPublicKey(block.Bytes); err != nil {
			return nil, fmt.Errorf("jwt public key %s: %w", f.pubFile, err)
		}
	}
	if err := a.Validate(); err != nil {
		return nil, cli.Usagef("serve: %v (set --jwt-key-file, $TRANSCRIPT_JWT_KEY, --jwt-public-key-file or --trust-headers)", err)
	}
	return a, nil
}

// exitCode maps err to the process exit code (see cli.ExitCode).
func exitCode(err error, stderr io.Writer) int {
	return cli.ExitCode(err, stderr, "transcript-serve -h")
}
