package reliability_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/mirror"
	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket/s3bucket"
	"github.com/transcriptstore/transcript/transcript/bucketurl"
)

// requireNoSecret fails if text shows secret.
func requireNoSecret(t *testing.T, text, secret, what string) {
	t.Helper()
	require.NotContains(t, text, secret, "%s shows the secret key:\n%s", what, text)
}

// formats renders v every way a log line, an error or a panic message might.
func formats(v any) string {
	return fmt.Sprintf("%v|%+v|%#v|%s|%q|%d|%x", v, v, v, v, v, v, v)
}

// TestSecrets: a secret key given to the S3 backend, through
// the environment or a config, never shows in errors, logs, --json output, panic
// messages or formatted configs, whether the endpoint is wrong, the credentials are
// wrong, or everything works.
func TestSecrets(t *testing.T) {
	srv := sharedS3(t)
	secret := "Sup3rSecret-" + randomName("")
	good := s3bucket.Config{Endpoint: srv.endpoint, Bucket: srv.newBucket(t, "rel-secret-"), Region: "us-east-1",
		AccessKey: srv.access, SecretKey: srv.secret, Insecure: true, RequestTimeout: 2 * time.Second, MaxRetries: -1}
	wrongKey, deadEndpoint := good, good
	wrongKey.SecretKey = secret
	deadEndpoint.SecretKey = secret
	deadEndpoint.Endpoint = freeAddr(t)
	ctx := ctxTimeout(t, 2*time.Minute)

	t.Run("configs", func(t *testing.T) {
		for _, cfg := range []s3bucket.Config{wrongKey, deadEndpoint} {
			requireNoSecret(t, formats(cfg), secret, "Config")
			requireNoSecret(t, formats(&cfg), secret, "*Config")
			requireNoSecret(t, formats(struct{ C s3bucket.Config }{cfg}), secret, "a struct holding a Config")
		}
	})
	t.Run("errors_and_panics", func(t *testing.T) {
		for name, cfg := range map[string]s3bucket.Config{"wrong key": wrongKey, "dead endpoint": deadEndpoint} {
			b, err := s3bucket.New(ctx, cfg)
			if err == nil {
				// New may not touch the server; the first request does.
				requireNoSecret(t, formats(b), secret, name+": *Bucket")
				store := newStore(t, b, "p")
				_, err = store.AppendSegment(ctx, transcript.TranscriptRef{AgentID: "a", SessionID: "s"}, [][]byte{[]byte(okEntry)}, transcript.NewRandomWriter())
				require.Error(t, err, name)
				requireNoSecret(t, formats(err), secret, name+": append error")
				_, err = store.ReadAll(ctx, transcript.TranscriptRef{AgentID: "a", SessionID: "s"})
				_ = b.Close()
			}
			require.Error(t, err, name)
			requireNoSecret(t, formats(err), secret, name+": error")
			// A panic carrying the config or the error prints them the same way.
			for _, v := range []any{cfg, err} {
				func() {
					defer func() {
						r := recover()
						requireNoSecret(t, formats(r), secret, name+": panic value")
					}()
					panic(v)
				}()
			}
		}
		// A bucket that works: formatting it shows no secret either.
		b := srv.open(t, good.Bucket, "", false, 0, 0)
		requireNoSecret(t, formats(b), srv.secret, "a working *Bucket")
		// Credentials in a URL are refused without repeating them.
		_, _, err := bucketurl.Open(ctx, fmt.Sprintf("s3://%s:%s@%s/p?endpoint=%s&insecure=true", srv.access, secret, good.Bucket, srv.endpoint))
		require.Error(t, err)
		requireNoSecret(t, formats(err), secret, "bucketurl error")
	})
	t.Run("mirror_logs_and_status", func(t *testing.T) {
		// The backend checks the credentials when it opens a bucket, so a wrong key
		// never reaches the mirror; a working bucket whose server goes away does.
		p := startProxy(t, srv.endpoint)
		b := srv.open(t, good.Bucket, p.Listen, false, time.Second, -1)
		store := newStore(t, b, "p")
		logs := &syncBuffer{}
		m, err := mirror.New(mirror.Config{Store: store, Writer: transcript.NewRandomWriter(), OutboxDir: t.TempDir(),
			MinBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond, RequestTimeout: time.Second,
			Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
		require.NoError(t, err)
		p.Stop()
		require.NoError(t, m.Upload(ctx, sessiontree.Batch{Ref: transcript.TranscriptRef{AgentID: "a", SessionID: "s"}, Entries: [][]byte{[]byte(okEntry)}}))
		actx, cancel := context.WithTimeout(ctx, time.Second)
		err = m.AwaitQuiescence(actx)
		cancel()
		require.Error(t, err, "the outage must fail the uploads")
		st := m.Status()
		cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		_ = m.Close(cctx)
		cancel()
		require.NotZero(t, st.Failures)
		requireNoSecret(t, formats(err), srv.secret, "AwaitQuiescence error")
		requireNoSecret(t, formats(st), srv.secret, "Status")
		requireNoSecret(t, formats(m), srv.secret, "Mirror")
		requireNoSecret(t, formats(store), srv.secret, "Store")
		requireNoSecret(t, logs.String(), srv.secret, "mirror log")
		require.NotEmpty(t, logs.String(), "the failures were logged")
	})
	t.Run("cli_json_and_stderr", func(t *testing.T) {
		runs, jsonRuns := 0, 0
		defer func() { t.Logf("%d failing CLI runs (%d with --json) show no secret", runs, jsonRuns) }()
		dir := t.TempDir()
		session := filepath.Join(dir, "s.jsonl")
		require.NoError(t, os.WriteFile(session, []byte(`{"type":"session","version":3,"id":"s","timestamp":"2026-01-02T03:04:05.000Z","cwd":"/"}`+"\n"+okEntry+"\n"), 0o644))
		for name, endpoint := range map[string]string{"wrong key": srv.endpoint, "dead endpoint": deadEndpoint.Endpoint} {
			store := fmt.Sprintf("s3://%s/p?endpoint=%s&insecure=true&timeout=2s", good.Bucket, endpoint)
			for _, args := range [][]string{
				{"transcript", "ls", "--store", store, "--json"},
				{"transcript", "verify", "--store", store, "--json"},
				{"transcript", "import", "--store", store, "--agent", "a", "--session", "s", "--json", session},
				{"transcript", "cat", "--store", store, "--agent", "a", "--session", "s"},
				{"transcript-compact", "--store", store, "--json"},
			} {
				cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				cmd := exec.CommandContext(cctx, buildCmd(t, args[0]), args[1:]...)
				cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID="+srv.access, "AWS_SECRET_ACCESS_KEY="+secret)
				var out bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &out
				runErr := cmd.Run()
				cancel()
				require.Error(t, runErr, "%s %v must fail: %s", name, args, out.String())
				requireNoSecret(t, out.String(), secret, fmt.Sprintf("%s: %v", name, args))
				if strings.Contains(strings.Join(args, " "), "--json") {
					jsonRuns++
				}
				runs++
			}
		}
	})
}
