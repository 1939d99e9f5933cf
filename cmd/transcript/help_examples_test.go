package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7/pkg/s3utils"
	"github.com/stretchr/testify/require"
)

// s3BucketInExample is the bucket of an s3:// URL in a help text.
var s3BucketInExample = regexp.MustCompile(`s3://([^/?'"\s]+)`)

// TestHelp_S3ExamplesNameValidBuckets: every s3:// URL in the help of every
// command of the four binaries names a bucket S3 accepts, so that an example
// copied as it stands fails for no reason of its own (a bucket "b" is refused,
// "Bucket name cannot be shorter than 3 characters").
func TestHelp_S3ExamplesNameValidBuckets(t *testing.T) {
	for bin, cmds := range binaryCommands {
		path := builtBinary(t, bin)
		for _, cmd := range cmds {
			words := []string{}
			if cmd != "" {
				words = append(words, cmd)
			}
			name := strings.Join(append([]string{bin}, words...), " ")
			t.Run(name, func(t *testing.T) {
				help := runBinary(t, path, "", append(words, "--help")...)
				require.Equal(t, 0, help.code, help.stderr)
				for _, m := range s3BucketInExample.FindAllStringSubmatch(help.stdout, -1) {
					if m[1] == "BUCKET" || strings.HasPrefix(m[1], "...") {
						continue // a placeholder, not an example
					}
					require.NoError(t, s3utils.CheckValidBucketNameStrict(m[1]), "%s --help: %s", name, m[0])
				}
			})
		}
	}
}
