package bucket_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// minioAllowed are the packages under segment/ and transcript/ that may depend on
// minio-go: the S3 backend, and the URL factory that wires it.
var minioAllowed = map[string]bool{
	"github.com/transcriptstore/transcript/transcript/bucket/s3bucket": true,
	"github.com/transcriptstore/transcript/transcript/bucketurl":       true,
}

// TestImports_MinioOnlyInS3Backend keeps the dependency direction of DESIGN.md:
// only the S3 backend (and cmd/...) imports minio-go, directly or through other
// packages.
func TestImports_MinioOnlyInS3Backend(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go command not found")
	}
	// Test files are exempt: other packages' tests run against MinIO through
	// s3bucket and bucketurl.
	cmd := exec.Command("go", "list", "-json=ImportPath,Deps",
		"github.com/transcriptstore/transcript/segment/...", "github.com/transcriptstore/transcript/transcript/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil && strings.Contains(stderr.String(), "matched no packages") {
		err = nil
	}
	require.NoError(t, err, "go list: %s", stderr.String())

	type pkg struct {
		ImportPath string
		Deps       []string
	}
	checked := 0
	dec := json.NewDecoder(bufio.NewReader(bytes.NewReader(out)))
	for dec.More() {
		var p pkg
		require.NoError(t, dec.Decode(&p))
		if minioAllowed[p.ImportPath] {
			continue
		}
		checked++
		for _, dep := range p.Deps {
			require.False(t, strings.HasPrefix(dep, "github.com/minio/minio-go"),
				"%s depends on %s; only the S3 backend may import minio-go", p.ImportPath, dep)
		}
	}
	require.NotZero(t, checked, "no packages checked")
}
