package filebucket_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/filebucket"
	"github.com/transcriptstore/transcript/transcript/storetest"
)

func TestBucket_Conformance(t *testing.T) {
	opts := storetest.Options{ChecksumNotStored: true, FileDirConflict: true}
	storetest.RunWithOptions(t, opts, func(t *testing.T) bucket.Bucket {
		b, err := filebucket.New(t.TempDir())
		require.NoError(t, err)
		return b
	})
}
