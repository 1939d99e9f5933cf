package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/repository"
)

// Defaults of Config.
const (
	DefaultRequestTimeout = 30 * time.Second
	DefaultReadyTimeout   = 5 * time.Second
	// DefaultBodyTimeout bounds the arrival of a request body.
	DefaultBodyTimeout = 30 * time.Second
	// DefaultMaxBodyBytes bounds a request body: an append batch.
	DefaultMaxBodyBytes = 64 << 20
	// DefaultMaxPage is the most entries one read returns. A page is bounded by
	// its bytes too (DefaultMaxPageBytes), so the count can be large: a session
	// of short entries reads in few round trips, one of large ones in pages of a
	// few megabytes.
	DefaultMaxPage = 10000
	// DefaultMaxPageBytes bounds the entries' bytes in one read's answer.
	DefaultMaxPageBytes = 4 << 20
	// DefaultWatchInterval is the default of Config.WatchInterval.
	DefaultWatchInterval = time.Second
	// DefaultHeartbeat is the default of Config.Heartbeat.
	DefaultHeartbeat = 15 * time.Second
	// DefaultMaxStreamsPerOwner is the default of Config.MaxStreamsPerOwner.
	DefaultMaxStreamsPerOwner = 16
	// DefaultMaxStreams is the default of Config.MaxStreams.
	DefaultMaxStreams = 4096
	// DefaultMaxHeaderBytes is the header size the HTTP server in front of a
	// Server should allow (http.Server.MaxHeaderBytes; transcript-serve's
	// default): room for a large bearer token, where net/http's default (1 MiB)
	// let every unauthenticated connection make the server hold a megabyte
	// while its headers arrived (300 such connections: 350 MiB).
	DefaultMaxHeaderBytes = 64 << 10
)

// Config configures a Server. Repositories and Auth are required.
type Config struct {
	// Repositories opens the repository of each request's authenticated owner
	// (its configuration sets the agent id of the served sessions, the clock and
	// the entry limit). Its store must not be bound to a namespace.
	Repositories *repository.Service
	// Auth derives the owner of every /v1 request.
	Auth Authenticator
	// Logger receives one structured line per request (default: discard). Lines
	// carry route, status, latency and owner; never tokens or entry contents.
	Logger *slog.Logger
	// Registry receives the server's metrics and is served on /metrics (default: a
	// new registry).
	Registry *prometheus.Registry
	// RequestTimeout bounds the work of one request (default DefaultRequestTimeout).
	RequestTimeout time.Duration
	// MaxBodyBytes bounds a request body (default DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// BodyTimeout bounds the time a request body takes to arrive, from the
	// start of the request's handling (default DefaultBodyTimeout); a body that
	// stalls answers 408.
	BodyTimeout time.Duration
	// MaxPage bounds the entries of one read (default DefaultMaxPage).
	MaxPage int
	// MaxPageBytes bounds the bytes of the entries of one read (default
	// DefaultMaxPageBytes): a page ends before the entry that would take it
	// past the bound, and holds at least one entry whatever its size.
	MaxPageBytes int
	// MaxCachedSessions bounds the session handles kept between requests (default
	// DefaultMaxCachedSessions; negative: none, every request reads its session
	// whole). See Server.
	MaxCachedSessions int
	// MaxCachedBytes bounds, about, the memory the entries of the cached
	// session handles take (default DefaultMaxCachedBytes): beyond it the least
	// recently used handles are dropped, the one used last excepted.
	MaxCachedBytes int64
	// MaxBodyBytesInFlight bounds the bytes of the request bodies the server
	// holds at once, all requests together (default
	// DefaultMaxBodyBytesInFlight): a body that would take them past it is
	// answered 503 unavailable with Retry-After.
	MaxBodyBytesInFlight int64
	// MaxBodyBytesPerOwner bounds the bytes of the request bodies of one owner
	// the server holds at once (default: half of MaxBodyBytesInFlight, and at
	// least MaxBodyBytes), so that one owner's concurrent large or slow appends
	// cannot take the whole of MaxBodyBytesInFlight from the others: a body
	// that would take its owner past it is answered 503 unavailable with
	// Retry-After.
	MaxBodyBytesPerOwner int64
	// WatchInterval is how often a watched session (one with open event streams
	// on this server) is brought up to date with the bucket, for the entries that
	// other servers commit (default DefaultWatchInterval). Entries appended
	// through this server are delivered at once.
	WatchInterval time.Duration
	// Heartbeat is the interval of the comments an event stream sends while it
	// has nothing to deliver, so that proxies keep it open and clients notice a
	// dead connection (default DefaultHeartbeat).
	Heartbeat time.Duration
	// MaxStreamsPerOwner bounds the open event streams of one owner (default
	// DefaultMaxStreamsPerOwner); beyond it a stream is answered 429
	// too_many_streams with Retry-After.
	MaxStreamsPerOwner int
	// MaxStreams bounds the open event streams of the server (default
	// DefaultMaxStreams); beyond it a stream is answered 503 unavailable with
	// Retry-After.
	MaxStreams int
}

// Server is the HTTP API over repository: sessions of the authenticated owner,
// created, listed, opened, read, appended to (strict mode, with an expected head),
// forked, deleted and watched (Server-Sent Events of committed entries). All state
// is in the bucket; any number of servers may serve one bucket. So that a request
// reads only what is new, it keeps the handles of recently used sessions, which
// catch up with the bucket on every request (see Config.MaxCachedSessions), but
// for a page of a strict session that ends inside what the handle holds and was
// read from the bucket less than HeldPageAge ago (see the package doc). Its
// Handler is safe for concurrent use; EndStreams ends the event streams (call it
// when shutdown begins: http.Server.RegisterOnShutdown), Close ends them too,
// stops their watchers and releases the handles.
type Server struct {
	cfg     Config
	metrics *metrics
	mux     *http.ServeMux
	routes  []Route
	// unknownRoute answers 404 unknown_route.
	unknownRoute http.HandlerFunc
	sessions     *sessionCache
	streams      *streams
	bodies       bodyBudget
	readiness    readiness
	chunks       sync.Pool // *bytes.Buffer: chunks of the bodies of entries pages (pageChunk), reused
}

// Route is one method and path pattern of the router.
type Route struct {
	Method, Path string
}

// New returns a server over cfg.
func New(cfg Config) (*Server, error) {
	if cfg.Repositories == nil {
		return nil, errors.New("server: no repositories")
	}
	if cfg.Auth == nil {
		return nil, errors.New("server: no authenticator")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	cfg = cfg.withDefaults()
	m, err := newMetrics(cfg.Registry)
	if err != nil {
		return nil, fmt.Errorf("server: metrics: %w", err)
	}
	s := &Server{cfg: cfg, metrics: m, mux: http.NewServeMux(), sessions: newSessionCache(cfg.MaxCachedSessions, cfg.MaxCachedBytes),
		streams: newStreams(), bodies: bodyBudget{max: cfg.MaxBodyBytesInFlight, perOwner: cfg.MaxBodyBytesPerOwner}}
	s.handle("POST", "/v1/sessions", s.auth(s.create))
	s.handle("GET", "/v1/sessions", s.auth(s.list))
	s.handle("GET", "/v1/sessions/{id}", s.auth(s.open))
	s.handle("DELETE", "/v1/sessions/{id}", s.auth(s.delete))
	s.handle("GET", "/v1/sessions/{id}/entries", s.auth(s.entries))
	s.handle("POST", "/v1/sessions/{id}/entries", s.auth(s.append))
	s.handle("POST", "/v1/sessions/{id}/fork", s.auth(s.fork))
	s.handle("GET", "/v1/sessions/{id}/events", s.authStream(s.events))
	s.handle("GET", "/healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	s.handle("GET", "/readyz", s.ready)
	s.handle("GET", "/metrics", promhttp.HandlerFor(cfg.Registry, promhttp.HandlerOpts{}).ServeHTTP)
	s.fallbacks()
	return s, nil
}

// withDefaults returns cfg with every limit left unset (zero, or below zero where
// zero cannot mean "none") at its default.
func (cfg Config) withDefaults() Config {
	positiveOr(&cfg.RequestTimeout, DefaultRequestTimeout)
	positiveOr(&cfg.MaxBodyBytes, DefaultMaxBodyBytes)
	positiveOr(&cfg.BodyTimeout, DefaultBodyTimeout)
	positiveOr(&cfg.MaxPage, DefaultMaxPage)
	positiveOr(&cfg.MaxPageBytes, DefaultMaxPageBytes)
	if cfg.MaxCachedSessions == 0 { // below zero: no cache
		cfg.MaxCachedSessions = DefaultMaxCachedSessions
	}
	positiveOr(&cfg.MaxCachedBytes, DefaultMaxCachedBytes)
	positiveOr(&cfg.MaxBodyBytesInFlight, DefaultMaxBodyBytesInFlight)
	positiveOr(&cfg.MaxBodyBytesPerOwner, max(cfg.MaxBodyBytesInFlight/2, min(cfg.MaxBodyBytes, cfg.MaxBodyBytesInFlight)))
	positiveOr(&cfg.WatchInterval, DefaultWatchInterval)
	positiveOr(&cfg.Heartbeat, DefaultHeartbeat)
	positiveOr(&cfg.MaxStreamsPerOwner, DefaultMaxStreamsPerOwner)
	positiveOr(&cfg.MaxStreams, DefaultMaxStreams)
	return cfg
}

// positiveOr sets *v to def unless it is above zero.
func positiveOr[T ~int | ~int64](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// EndStreams ends every event stream (each closes cleanly; its client resumes
// with Last-Event-ID, on this server or another) and refuses new ones with 503.
// Register it with http.Server.RegisterOnShutdown: a stream never goes idle, so
// a graceful shutdown would otherwise wait for it until its deadline.
func (s *Server) EndStreams() { s.streams.end() }

// Close ends the event streams, waits for their watchers to stop and releases
// the cached session handles. Call it after the HTTP server has shut down.
func (s *Server) Close() {
	s.streams.end()
	s.streams.wait()
	s.sessions.close()
}

// Handler returns the server's HTTP handler.
func (s *Server) Handler() http.Handler { return http.HandlerFunc(s.serveHTTP) }

// Routes returns every method and path pattern the router serves.
func (s *Server) Routes() []Route { return append([]Route(nil), s.routes...) }

// handle registers h under method and path, counted and timed by route pattern
// and logged.
func (s *Server) handle(method, path string, h http.HandlerFunc) {
	s.routes = append(s.routes, Route{Method: method, Path: path})
	pattern := method + " " + path
	s.mux.HandleFunc(pattern, s.observed(pattern, h))
}

// fallbacks answers, in the JSON error envelope, a request for a path the router
// does not serve (404 unknown_route) and one for a path it serves with another
// method (405 method_not_allowed, with Allow).
func (s *Server) fallbacks() {
	methods := map[string][]string{}
	for _, rt := range s.routes {
		methods[rt.Path] = append(methods[rt.Path], rt.Method)
		if rt.Method == http.MethodGet {
			methods[rt.Path] = append(methods[rt.Path], http.MethodHead)
		}
	}
	for path, ms := range methods {
		slices.Sort(ms)
		allow := strings.Join(ms, ", ")
		s.mux.HandleFunc(path, s.observed(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", allow)
			s.fail(w, r, http.StatusMethodNotAllowed, CodeMethodNotAllowed,
				fmt.Sprintf("%s is not a method of %s (allowed: %s)", r.Method, path, allow), nil)
		}))
	}
	s.unknownRoute = s.observed("/", func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, http.StatusNotFound, CodeUnknownRoute, "no such route (see openapi.yaml)", nil)
	})
	s.mux.HandleFunc("/", s.unknownRoute)
}

// serveHTTP serves r with the router, but for a request the router would
// answer itself, outside the JSON error envelope: a path that is not in its
// canonical form (dot segments, repeated slashes), which it redirects (307,
// text/html), and a CONNECT, which it answers 404 in plain text. Both answer
// 404 unknown_route: no route of the document has such a path.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect || !canonicalPath(r.URL.EscapedPath()) {
		s.unknownRoute(w, r)
		return
	}
	s.mux.ServeHTTP(w, r)
}

// canonicalPath reports whether p is a path the router serves as it is, without
// redirecting to its cleaned form (as http.ServeMux cleans it: path.Clean,
// keeping a trailing slash).
func canonicalPath(p string) bool {
	if p == "" || p[0] != '/' {
		return false
	}
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c == p
}

// observed wraps h: counted and timed under pattern, and logged.
func (s *Server) observed(pattern string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		s.metrics.inFlight.Inc()
		defer s.metrics.inFlight.Dec()
		rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		ri := &requestInfo{}
		h(rec, r.WithContext(context.WithValue(r.Context(), infoKey{}, ri)))
		d := time.Since(start)
		s.metrics.requests.WithLabelValues(pattern, strconv.Itoa(rec.code)).Inc()
		s.metrics.latency.WithLabelValues(pattern).Observe(d.Seconds())
		attrs := []slog.Attr{
			slog.String("route", pattern), slog.Int("status", rec.code),
			slog.Float64("duration_ms", float64(d.Microseconds())/1000),
		}
		if ri.owner != nil {
			attrs = append(attrs, slog.String("tenant", ri.owner.Tenant), slog.String("user", ri.owner.User))
		}
		if ri.err != nil {
			attrs = append(attrs, slog.String("error", ri.err.Error()))
		}
		level := slog.LevelInfo
		if rec.code >= 500 {
			level = slog.LevelError
		}
		s.cfg.Logger.LogAttrs(r.Context(), level, "request", attrs...)
	}
}

// requestInfo collects what a handler learned for the request log line.
type requestInfo struct {
	owner *repository.Owner
	err   error
}

type infoKey struct{}

func infoOf(r *http.Request) *requestInfo {
	if ri, ok := r.Context().Value(infoKey{}).(*requestInfo); ok {
		return ri
	}
	return &requestInfo{}
}

type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.code = code
	s.ResponseWriter.WriteHeader(code)
}

// Unwrap returns the wrapped writer (for http.ResponseController).
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// ownerHandler is a /v1 handler that runs with the request owner's repository.
type ownerHandler func(w http.ResponseWriter, r *http.Request, repo *repository.Repository)

// auth authenticates the request, bounds its body and its time, and opens the
// owner's repository for h. Work runs on a context detached from the client's
// connection (with the request timeout), so an append whose client hangs up, or
// that is in flight at shutdown, finishes rather than stopping half way.
func (s *Server) auth(h ownerHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), s.cfg.RequestTimeout)
		defer cancel()
		r = r.WithContext(ctx)
		body := s.bodies.reader(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
		defer body.release()
		r.Body = body
		s.withRepository(w, r, func(w http.ResponseWriter, r *http.Request, repo *repository.Repository) {
			body.owner = repo.Namespace() // the body counts against its owner's share
			h(w, r, repo)
		})
	}
}

// authStream is auth for a stream: its work runs on the request's own context,
// which ends when the client goes away, and bounds its own steps in time.
func (s *Server) authStream(h ownerHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
		s.withRepository(w, r, h)
	}
}

// withRepository authenticates r and runs h with its owner's repository.
func (s *Server) withRepository(w http.ResponseWriter, r *http.Request, h ownerHandler) {
	owner, err := s.cfg.Auth.Authenticate(r)
	if err != nil {
		w.Header().Set("WWW-Authenticate", `Bearer realm="transcript"`)
		s.fail(w, r, http.StatusUnauthorized, CodeUnauthorized, "missing, invalid or expired credentials", err)
		return
	}
	infoOf(r).owner = &owner
	repo, err := s.cfg.Repositories.Repository(owner)
	if err != nil {
		s.failStore(w, r, err)
		return
	}
	defer repo.Close()
	h(w, r, repo)
}

// ReadyAge is how long the answer of /readyz (one request to the bucket) is
// reused: the route is unauthenticated, and each of its requests was one to the
// bucket, so that anyone who reached the server could send the bucket as many
// requests as it sent, at the cost of every owner's.
const ReadyAge = time.Second

// readiness is the last answer of the bucket to /readyz.
type readiness struct {
	mu  sync.Mutex // held while the bucket is asked: concurrent probes wait for one answer
	at  time.Time
	err error
}

// check returns the bucket's last answer if it is less than ReadyAge old, else
// asks it again (ready).
func (rd *readiness) check(ready func(context.Context) error) error {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	if !rd.at.IsZero() && time.Since(rd.at) < ReadyAge {
		return rd.err
	}
	// Not the request's context: the answer is shared with the probes that
	// wait for it.
	ctx, cancel := context.WithTimeout(context.Background(), DefaultReadyTimeout)
	defer cancel()
	rd.err = ready(ctx)
	rd.at = time.Now()
	return rd.err
}

// ready reports whether the bucket answers (repository.Service.Ready), as it
// answered less than ReadyAge ago.
func (s *Server) ready(w http.ResponseWriter, r *http.Request) {
	if err := s.readiness.check(s.cfg.Repositories.Ready); err != nil {
		s.fail(w, r, http.StatusServiceUnavailable, CodeNotReady, "bucket unreachable", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// SessionMetadata is the JSON of a session in responses.
type SessionMetadata struct {
	ID        string `json:"id"`
	CreatedAt string `json:"createdAt"`
	UpdatedAt string `json:"updatedAt,omitempty"`
	Name      string `json:"name,omitempty"`
	Cwd       string `json:"cwd"`
	// ParentSession is the id of the session this one was forked from.
	ParentSession string `json:"parentSession,omitempty"`
	// Head is the committed head (strict) or active leaf; null for none.
	Head *string `json:"head"`
	// EntryCount counts the entries; their sequence numbers run from 1 to
	// EntryCount (see the entries route).
	EntryCount int  `json:"entryCount"`
	Strict     bool `json:"strict"`
	// Damaged, set only for a strict session whose stored head names segments
	// the bucket lacks or does not match its committed entries, says so: the
	// session reads as the bucket holds it (Head is then the head those
	// entries make, not the stored one) and refuses appends (500
	// invalid_session) until an operator repairs it.
	Damaged string `json:"damaged,omitempty"`
}

func headPtr(h string) *string {
	if h == "" {
		return nil
	}
	return &h
}

// metadataOf is the JSON of a session's metadata.
func metadataOf(info repository.SessionInfo) SessionMetadata {
	m := SessionMetadata{
		ID: info.ID, Name: info.Name, Cwd: info.Cwd, ParentSession: info.ParentSession,
		Head: headPtr(info.Leaf), EntryCount: info.Entries, Strict: info.Strict,
	}
	if !info.Created.IsZero() {
		m.CreatedAt = pi.FormatTimestamp(info.Created)
	}
	if !info.Updated.IsZero() {
		m.UpdatedAt = pi.FormatTimestamp(info.Updated)
	}
	return m
}
