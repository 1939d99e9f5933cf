// Command transcript-serve serves the transcript store over HTTP: Pi's session
// storage port (create, list, open, read, append with an expected head, fork,
// delete) for runtimes in any language, with the owner of every request taken from
// a verified bearer JWT.
//
// Usage:
//
//	transcript-serve [serve] [--store URL] --jwt-key-file FILE [--addr :8080]
//	transcript-serve token --tenant T --user U [--ttl 1h] --jwt-key-file FILE
//
// Flags are GNU style (--flag value or --flag=value), as in the other commands
// (internal/cli); help and --version go to stdout, errors to stderr.
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
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/pflag"

	"github.com/transcriptstore/transcript/internal/cli"
	"github.com/transcriptstore/transcript/repository"
	"github.com/transcriptstore/transcript/server"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/metricbucket"
	"github.com/transcriptstore/transcript/transcript/bucketurl"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	os.Exit(exitCode(err, os.Stderr))
}

const usage = `transcript-serve serves the transcript store over HTTP (server/openapi.yaml).

Usage:
  transcript-serve [serve] [flags]      run the server
  transcript-serve token [flags]        print an HS256 token for a test owner

Run 'transcript-serve COMMAND --help' for a command's flags; 'transcript-serve
--version' prints the version. Exit codes: 0 ok (or SIGTERM handled), 1 failure,
2 usage.
`

const serveUsage = `
Usage: transcript-serve [serve] [--store URL] [flags]

Serves the sessions of --store (as in every command: default $TRANSCRIPT_STORE,
else file://./transcripts) over HTTP (server/openapi.yaml): the owner of each
request comes from a verified bearer JWT (HS256 key from --jwt-key-file or
$TRANSCRIPT_JWT_KEY; RS256 or EdDSA from --jwt-public-key-file), or, with
--trust-headers, from X-Transcript-Tenant and X-Transcript-User (only behind an
authenticating proxy: anyone who reaches the server can claim any owner). Logs
are JSON lines on stderr; durations are in milliseconds (duration_ms). SIGTERM
stops accepting, ends the event streams (clients resume with Last-Event-ID) and
lets in-flight appends finish.

At most --max-connections connections are served at once: more wait in the
kernel's listen backlog, costing the server nothing, until one closes, and
keep-alive connections idle between requests are closed to make room for them.
Event streams take at most four fifths of the connections, rounded down (4096
by default; past that a stream is answered 503), so requests and health probes
always find room beyond them (from --max-connections 2 on). A probe (/healthz, /readyz) past the limit waits like
any client, behind requests in progress only: its timeout should exceed
--request-timeout when the server runs at its limit.

Examples:
  TRANSCRIPT_JWT_KEY=$(openssl rand -hex 32) transcript-serve --addr :8080 \
    --store 's3://transcripts/sessions?endpoint=127.0.0.1:9000&insecure=true&create=true'
  transcript-serve --store file://./transcripts --jwt-public-key-file idp.pem --jwt-issuer https://idp
`

const tokenUsage = `
Usage: transcript-serve token --tenant T --user U [--ttl 1h] [--jwt-key-file FILE]

Prints an HS256 bearer token for the owner tenant/user, valid for --ttl (more than
0), signed with --jwt-key-file or $TRANSCRIPT_JWT_KEY: for tests and trials.

Examples:
  transcript-serve token --tenant acme --user alice --ttl 1h
`

// run dispatches the subcommand.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "serve":
			return serve(ctx, args[1:], getenv, stdout, stderr)
		case "token":
			return token(args[1:], getenv, stdout)
		case "help", "-h", "--help":
			if len(args) > 1 && (args[1] == "serve" || args[1] == "token") {
				return run(ctx, []string{args[1], "--help"}, getenv, stdout, stderr)
			}
			fmt.Fprint(stdout, usage)
			return cli.ErrHelp
		case "--" + cli.VersionFlag:
			_, err := fmt.Fprintln(stdout, cli.Version())
			return err
		}
		if !strings.HasPrefix(args[0], "-") {
			if s := cli.Suggest(args[0], []string{"serve", "token", "help"}); s != "" {
				return cli.Usagef("unknown command %q (did you mean %q?)", args[0], s)
			}
			return cli.Usagef("unknown command %q", args[0])
		}
	}
	return serve(ctx, args, getenv, stdout, stderr)
}

// parse parses args into fs (see cli.Parse); positional arguments are a usage error.
func parse(fs *pflag.FlagSet, args []string) error {
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	return cli.NoArgs(fs)
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

func token(args []string, getenv func(string) string, stdout io.Writer) error {
	fs := cli.NewFlagSet("token", tokenUsage, stdout)
	tenant := fs.String("tenant", "", "owner `TENANT` (required)")
	user := fs.String("user", "", "owner `USER` (required)")
	ttl := fs.Duration("ttl", time.Hour, "token lifetime, more than 0")
	keyFile := fs.String("jwt-key-file", "", "HS256 key `FILE` (default $TRANSCRIPT_JWT_KEY)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *tenant == "" || *user == "" {
		return cli.Usagef("token: --tenant and --user are required")
	}
	if *ttl <= 0 {
		return cli.Usagef("token: --ttl %s: want more than 0 (a token that is already expired is refused by the server)", *ttl)
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
	// store is --store (and --agent: the agent id of the sessions), as every
	// command names them (cli.StoreFlags).
	store                                        cli.StoreFlags
	addr, keyFile, pubFile, issuer, audience     string
	logFormat                                    string
	trustHeaders                                 bool
	requestTimeout, shutdownTimeout, bodyTimeout time.Duration
	watchInterval                                time.Duration
	maxBody, maxBodiesInFlight, maxCachedBytes   int64
	maxBodiesPerOwner                            int64
	maxStreamsPerOwner, maxHeaderBytes           int
	maxConnections                               int
}

// newServeFlagSet returns the flag set of serve and the flags it fills; its help
// goes to stdout.
func newServeFlagSet(getenv func(string) string, stdout io.Writer) (*pflag.FlagSet, *serveFlags) {
	fs := cli.NewFlagSet("serve", serveUsage, stdout)
	var f serveFlags
	fs.StringVar(&f.addr, "addr", ":8080", "listen `ADDRESS`")
	f.store.RegisterStore(fs, getenv)
	fs.StringVar(&f.keyFile, "jwt-key-file", "", "HS256 key `FILE` (default $TRANSCRIPT_JWT_KEY)")
	fs.StringVar(&f.pubFile, "jwt-public-key-file", "", "PEM public key `FILE` (RSA: RS256, Ed25519: EdDSA)")
	fs.StringVar(&f.issuer, "jwt-issuer", "", "required iss claim")
	fs.StringVar(&f.audience, "jwt-audience", "", "required aud claim")
	fs.BoolVar(&f.trustHeaders, "trust-headers", false, "take the owner from X-Transcript-Tenant/-User (behind an authenticating proxy only)")
	fs.StringVar(&f.store.Agent, "agent", "", "agent `ID` of the sessions (default \"default\")")
	fs.DurationVar(&f.requestTimeout, "request-timeout", server.DefaultRequestTimeout, "time limit of one request")
	fs.DurationVar(&f.shutdownTimeout, "shutdown-timeout", 30*time.Second, "time in-flight requests get on shutdown")
	fs.DurationVar(&f.bodyTimeout, "body-timeout", server.DefaultBodyTimeout, "time a request body may take to arrive (then 408)")
	fs.Int64Var(&f.maxBody, "max-body", server.DefaultMaxBodyBytes, "largest request body, in `BYTES`")
	fs.Int64Var(&f.maxBodiesInFlight, "max-bodies-in-flight", server.DefaultMaxBodyBytesInFlight,
		"request bodies the server holds at once, all requests together, in `BYTES` (then 503)")
	fs.Int64Var(&f.maxBodiesPerOwner, "max-bodies-per-owner", 0,
		"request bodies of one owner the server holds at once, in `BYTES` (then 503; default half of --max-bodies-in-flight, at least --max-body)")
	fs.Int64Var(&f.maxCachedBytes, "max-cached-bytes", server.DefaultMaxCachedBytes,
		"entries the session handles kept between requests hold in all, about, in `BYTES`")
	fs.StringVar(&f.logFormat, "log", "json", "log `FORMAT`: json or text")
	fs.IntVar(&f.maxStreamsPerOwner, "max-streams-per-owner", server.DefaultMaxStreamsPerOwner,
		"open event streams one owner may hold (then 429)")
	fs.IntVar(&f.maxHeaderBytes, "max-header-bytes", server.DefaultMaxHeaderBytes,
		"largest request header section, in `BYTES` (then 431)")
	fs.IntVar(&f.maxConnections, "max-connections", defaultMaxConnections,
		"connections served at once; more wait in the listen backlog (idle keep-alive connections are closed for them)")
	fs.DurationVar(&f.watchInterval, "watch-interval", server.DefaultWatchInterval,
		"how often a watched session is read for what other servers committed")
	return fs, &f
}

func serve(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs, fp := newServeFlagSet(getenv, stdout)
	if err := parse(fs, args); err != nil {
		return err
	}
	f := *fp
	if err := f.store.Validate("serve"); err != nil {
		return err
	}
	switch {
	case f.logFormat != "json" && f.logFormat != "text":
		return cli.Usagef("serve: --log %q: want json or text", f.logFormat)
	case f.requestTimeout <= 0 || f.bodyTimeout <= 0 || f.shutdownTimeout < 0 || f.watchInterval <= 0:
		return cli.Usagef("serve: --request-timeout, --body-timeout and --watch-interval must be more than 0, --shutdown-timeout at least 0")
	case f.maxStreamsPerOwner <= 0:
		return cli.Usagef("serve: --max-streams-per-owner %d: want more than 0", f.maxStreamsPerOwner)
	case f.maxHeaderBytes <= 0:
		return cli.Usagef("serve: --max-header-bytes %d: want more than 0", f.maxHeaderBytes)
	case f.maxConnections <= 0:
		return cli.Usagef("serve: --max-connections %d: want more than 0", f.maxConnections)
	case f.maxBody <= 0 || f.maxBodiesInFlight < f.maxBody || f.maxCachedBytes <= 0:
		return cli.Usagef("serve: --max-body %d, --max-bodies-in-flight %d, --max-cached-bytes %d: want more than 0, and --max-bodies-in-flight at least --max-body",
			f.maxBody, f.maxBodiesInFlight, f.maxCachedBytes)
	case f.maxBodiesPerOwner != 0 && (f.maxBodiesPerOwner < f.maxBody || f.maxBodiesPerOwner > f.maxBodiesInFlight):
		return cli.Usagef("serve: --max-bodies-per-owner %d: want at least --max-body (%d) and at most --max-bodies-in-flight (%d)",
			f.maxBodiesPerOwner, f.maxBody, f.maxBodiesInFlight)
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
	if f.trustHeaders {
		log.Warn("--trust-headers: every request's owner is taken from its X-Transcript-Tenant and X-Transcript-User headers, unverified; " +
			"only an authenticating proxy may reach this server")
	}
	// The bucket's requests, failures and latency are served on /metrics with the
	// server's own, and the process's memory and goroutines (as transcript
	// follow serves them).
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), collectors.NewGoCollector())
	bm, err := metricbucket.NewMetrics(reg)
	if err != nil {
		return err
	}
	// The server creates sessions: a directory store is created, a bucket when
	// the URL says create=true; a missing one is "not found", as in every command.
	store, err := cli.OpenStoreWrapped(ctx, f.store.URL, "", cli.ReadWrite,
		func(b bucket.Bucket, backend string) bucket.Bucket { return bm.Wrap(b, backend) })
	if err != nil {
		return err
	}
	defer store.Close()
	repos, err := repository.NewService(store, repository.Config{AgentID: f.store.Agent})
	if err != nil {
		return err
	}
	srv, err := server.New(server.Config{
		Repositories: repos, Auth: auth, Logger: log, Registry: reg,
		RequestTimeout: f.requestTimeout, MaxBodyBytes: f.maxBody, BodyTimeout: f.bodyTimeout,
		MaxBodyBytesInFlight: f.maxBodiesInFlight, MaxBodyBytesPerOwner: f.maxBodiesPerOwner, MaxCachedBytes: f.maxCachedBytes,
		WatchInterval: f.watchInterval, MaxStreamsPerOwner: f.maxStreamsPerOwner, MaxStreams: maxStreamsFor(f.maxConnections),
	})
	if err != nil {
		return err
	}
	defer srv.Close()
	tl, err := net.Listen("tcp", f.addr)
	if err != nil {
		return err
	}
	ln := newLimitListener(tl, f.maxConnections)
	hs := &http.Server{
		Handler:           srv.Handler(),
		ConnState:         ln.ConnState,
		ReadHeaderTimeout: 10 * time.Second,
		MaxHeaderBytes:    f.maxHeaderBytes,
		ReadTimeout:       f.requestTimeout,
		WriteTimeout:      f.requestTimeout + 10*time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(handler, slog.LevelWarn),
	}
	// An event stream never goes idle: shutdown ends the streams (their clients
	// resume elsewhere with Last-Event-ID) rather than wait for them.
	hs.RegisterOnShutdown(srv.EndStreams)
	// Nor for connections that never sent a request (see CloseFresh).
	hs.RegisterOnShutdown(ln.CloseFresh)
	log.Info("listening", slog.String("addr", ln.Addr().String()), slog.String("store", bucketurl.Redact(f.store.URL)))
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
