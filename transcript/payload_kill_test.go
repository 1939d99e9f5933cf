package transcript_test

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/internal/s3test"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/filebucket"
	"github.com/transcriptstore/transcript/transcript/bucketurl"
)

// The environment of TestPayloadKillChild, set by TestPayloadKill_BetweenPayloadAndSegment.
const (
	killStoreEnv = "TRANSCRIPT_TEST_PAYLOAD_KILL_STORE" // bucketurl of the store
	killReadyEnv = "TRANSCRIPT_TEST_PAYLOAD_KILL_READY" // file the child creates once its payload is stored
)

// killChildLifetime bounds the child should the parent never kill it.
const killChildLifetime = 2 * time.Minute

// killSeed draws the image the killed writer was writing.
const killSeed = 41

// stopAfterPayload is the killed writer's bucket: once a payload object is
// stored, it says so (creates ready) and blocks, until the parent kills the
// process, before the segment PUT that would reference the payload.
type stopAfterPayload struct {
	bucket.Bucket
	ready string
}

func (b *stopAfterPayload) Put(ctx context.Context, key string, r io.Reader, size int64, opts bucket.PutOptions) error {
	if err := b.Bucket.Put(ctx, key, r, size, opts); err != nil {
		return err
	}
	if strings.Contains(key, "/payloads/") && !strings.Contains(key, "/gc/") {
		if err := os.WriteFile(b.ready, []byte(key), 0o600); err != nil {
			return err
		}
		time.Sleep(killChildLifetime) // the parent kills the process meanwhile
		os.Exit(3)                    // never reached when the parent does its part
	}
	return nil
}

// TestPayloadKillChild is the writer process of
// TestPayloadKill_BetweenPayloadAndSegment; it does nothing unless started by it.
// It appends an entry holding a new image to the session ref, and is killed after
// the image's payload PUT, before the segment PUT.
func TestPayloadKillChild(t *testing.T) {
	if os.Getenv(killStoreEnv) == "" {
		t.Skip("run by TestPayloadKill_BetweenPayloadAndSegment only")
	}
	ctx := context.Background()
	b, prefix, err := bucketurl.Open(ctx, os.Getenv(killStoreEnv))
	require.NoError(t, err)
	s, err := transcript.New(transcript.Config{Bucket: &stopAfterPayload{Bucket: b, ready: os.Getenv(killReadyEnv)},
		Prefix: prefix, PayloadThreshold: testThreshold})
	require.NoError(t, err)
	_, err = s.AppendSegment(ctx, ref, [][]byte{killedEntry()}, newWriter(t, "killed"))
	require.NoError(t, err)
	t.Fatal("the segment was stored: the writer was not stopped after its payload PUT")
}

// killedEntry is the entry the killed writer was appending.
func killedEntry() []byte { return imageEntry("k", "b", imageData(killSeed, 2*testThreshold)) }

// TestPayloadKill_BetweenPayloadAndSegment: a writer process killed with SIGKILL
// between its payload PUT and its segment PUT loses nothing (the session reads
// as before), leaves one orphan payload object, which the collector marks and
// then deletes after the delay (nothing else goes), and a later write of the same
// payload works. On the directory backend, and on MinIO with the S3 environment
// set (failing under CI=true without it).
func TestPayloadKill_BetweenPayloadAndSegment(t *testing.T) {
	backends := map[string]func(t *testing.T) (bucket.Bucket, string){
		"file": func(t *testing.T) (bucket.Bucket, string) {
			dir := t.TempDir()
			b, err := filebucket.New(dir)
			require.NoError(t, err)
			return b, "file://" + dir
		},
		"minio": func(t *testing.T) (bucket.Bucket, string) {
			endpoint, _, _ := s3test.MinIO().Endpoint(t)
			b := s3test.MinIO().NewBucket(t, "transcript-payload-kill-")
			return b, "s3://" + b.Name() + "?endpoint=" + endpoint + "&insecure=true"
		},
	}
	for name, open := range backends {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			b, url := open(t)
			s := newStore(t, b, transcript.Config{PayloadThreshold: testThreshold})
			transcript.SetPayloadFloor(s, 0)
			want := [][]byte{entry("a", ""), imageEntry("b", "a", imageData(40, 2*testThreshold))}
			_, err := s.AppendSegment(ctx, ref, want, newWriter(t, "w1"))
			require.NoError(t, err)
			kept := payloadKeys(t, b, "", ref.Namespace)
			require.Len(t, kept, 1)

			killWriter(t, url)

			orphan := hashHex(imageData(killSeed, 2*testThreshold))
			require.ElementsMatch(t, append([]string{orphan}, kept...), payloadKeys(t, b, "", ref.Namespace),
				"the killed writer stored its payload")
			requireEveryRead(t, s, ref, want)

			res, err := s.CollectPayloads(ctx, ref.Namespace, gcNow)
			require.NoError(t, err)
			require.Equal(t, 1, res.Marked, "the orphan is marked")
			require.Equal(t, 0, res.Deleted, "and not deleted before the delay")
			res, err = s.CollectPayloads(ctx, ref.Namespace, gcNow)
			require.NoError(t, err)
			require.Equal(t, 1, res.Deleted, "the orphan goes once its mark is old enough")
			require.Equal(t, kept, payloadKeys(t, b, "", ref.Namespace), "nothing else goes")
			requireNoPayloadMarks(t, b, ref.Namespace)
			requireEveryRead(t, s, ref, want)

			_, err = s.AppendSegment(ctx, ref, [][]byte{killedEntry()}, newWriter(t, "w2"))
			require.NoError(t, err, "the same payload is written again")
			requireEveryRead(t, s, ref, append(want, killedEntry()))
			require.ElementsMatch(t, append([]string{orphan}, kept...), payloadKeys(t, b, "", ref.Namespace))
		})
	}
}

// killWriter runs TestPayloadKillChild on the store at url, waits (bounded) until
// it has stored its payload, and kills it with SIGKILL.
func killWriter(t *testing.T, url string) {
	t.Helper()
	ready := filepath.Join(t.TempDir(), "ready")
	cmd := exec.Command(os.Args[0], "-test.run=^TestPayloadKillChild$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), killStoreEnv+"="+url, killReadyEnv+"="+ready)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.After(time.Minute)
	for {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("the writer exited before its payload PUT: %v\n%s", err, out.String())
		case <-deadline:
			_ = cmd.Process.Kill()
			<-exited
			t.Fatalf("the writer stored no payload within a minute:\n%s", out.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	err := <-exited
	ee, ok := err.(*exec.ExitError)
	require.True(t, ok, "the writer must die by SIGKILL: %v\n%s", err, out.String())
	ws, ok := ee.Sys().(syscall.WaitStatus)
	require.True(t, ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL, "the writer must die by SIGKILL, not exit:\n%s", out.String())
}
