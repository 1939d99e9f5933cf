package reliability_test

import (
	"os"
	"testing"

	"github.com/rs/zerolog"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		// A child process of a crash test is killed, never checked for leaks.
		os.Exit(m.Run())
	}
	// toxiproxy's toxics log every interrupted copy through zerolog's global logger.
	zerolog.SetGlobalLevel(zerolog.WarnLevel)
	goleak.VerifyTestMain(m,
		// Idle keep-alive connections of HTTP clients (the S3 backend) outlive tests.
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
		// toxiproxy v2.5.0 leaves link goroutines blocked after a link closed.
		goleak.IgnoreAnyFunction("github.com/Shopify/toxiproxy/v2/toxics.(*ToxicStub).Run"),
		goleak.IgnoreAnyFunction("github.com/Shopify/toxiproxy/v2/stream.(*ChanWriter).Write"),
		goleak.IgnoreAnyFunction("github.com/Shopify/toxiproxy/v2/stream.(*ChanReader).Read"),
	)
}
