package reliability_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		// A child process of a crash test is killed, never checked for leaks.
		os.Exit(m.Run())
	}
	// toxiproxy's toxics log every interrupted copy through zerolog's global logger.
	zerolog.SetGlobalLevel(zerolog.WarnLevel)
	code := m.Run()
	bins.cleanup()
	if code == 0 {
		err := goleak.Find(
			// Idle keep-alive connections of HTTP clients (the S3 backend) outlive tests.
			goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
			goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
			goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
			// toxiproxy v2.5.0 leaves link goroutines blocked after a link closed.
			goleak.IgnoreAnyFunction("github.com/Shopify/toxiproxy/v2/toxics.(*ToxicStub).Run"),
			goleak.IgnoreAnyFunction("github.com/Shopify/toxiproxy/v2/stream.(*ChanWriter).Write"),
			goleak.IgnoreAnyFunction("github.com/Shopify/toxiproxy/v2/stream.(*ChanReader).Read"),
		)
		if err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// binaries builds the project's commands once per test run, into a temp directory
// removed by TestMain.
type binaries struct {
	mu    sync.Mutex
	dir   string
	built map[string]string
}

var bins = &binaries{built: map[string]string{}}

// buildCmd returns the path of the command built from ../../cmd/{name}.
func buildCmd(t testing.TB, name string) string {
	t.Helper()
	bins.mu.Lock()
	defer bins.mu.Unlock()
	if p, ok := bins.built[name]; ok {
		return p
	}
	if bins.dir == "" {
		dir, err := os.MkdirTemp("", "reliability-bin-")
		require.NoError(t, err)
		bins.dir = dir
	}
	p := filepath.Join(bins.dir, name)
	out, err := exec.Command("go", "build", "-o", p, filepath.Join("..", "..", "cmd", name)).CombinedOutput()
	require.NoError(t, err, "go build %s:\n%s", name, out)
	bins.built[name] = p
	return p
}

func (b *binaries) cleanup() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dir != "" {
		_ = os.RemoveAll(b.dir)
	}
}
