package s3bucket_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript/bucket/s3bucket"
)

// TestRedact_EveryVerb formats a Config and a working *Bucket (whose unexported
// config holds the secret) with every verb a log line or error might use, alone and
// inside other values: the secret key never shows. (A Config in an unexported field
// of another struct is out of reach: fmt does not call methods of such fields.)
func TestRedact_EveryVerb(t *testing.T) {
	b := newFake(t, &fakeS3{}, 0)
	cfg := s3bucket.Config{Endpoint: "h:9000", Bucket: "b", AccessKey: "AKIAEXAMPLE", SecretKey: "test-secret"}
	type holder struct {
		B *s3bucket.Bucket
		C s3bucket.Config
		b *s3bucket.Bucket
	}
	for _, v := range []any{b, cfg, &cfg, holder{b, cfg, b}, &holder{b, cfg, b}, []any{b, cfg}} {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%d", "%x"} {
			s := fmt.Sprintf(verb, v)
			require.NotContains(t, s, "test-secret", "%s of %T", verb, v)
		}
	}
}
