package membucket_test

import (
	"errors"
	"io"
	"strings"
	"testing/iotest"

	"github.com/stretchr/testify/require"
	"testing"

	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/buckettest"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

func TestBucket_Conformance(t *testing.T) {
	buckettest.Run(t, func(t *testing.T) bucket.Bucket { return membucket.New() })
}

func TestBucket_Replace(t *testing.T) {
	b := membucket.New()
	ctx := t.Context()
	require.NoError(t, b.Put(ctx, "k", strings.NewReader("old"), 3, bucket.PutOptions{Checksum: "1"}))
	require.NoError(t, b.Replace(ctx, "k", strings.NewReader("newer"), 5, bucket.PutOptions{Checksum: "2"}))
	rc, info, err := b.Get(ctx, "k")
	require.NoError(t, err)
	defer rc.Close()
	data, err := io.ReadAll(rc)
	require.NoError(t, err)
	require.Equal(t, "newer", string(data))
	require.Equal(t, "2", info.Checksum)
	require.Error(t, b.Replace(ctx, "k", iotest.ErrReader(errors.New("boom")), -1, bucket.PutOptions{}))
	st, err := b.Stat(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, int64(5), st.Size, "a failed replace keeps the old object")
}
