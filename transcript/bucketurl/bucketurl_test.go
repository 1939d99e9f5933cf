package bucketurl_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/internal/s3test"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/filebucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
	"github.com/transcriptstore/transcript/transcript/bucket/s3bucket"
	"github.com/transcriptstore/transcript/transcript/bucketurl"
)

func TestParse(t *testing.T) {
	wd, err := os.Getwd()
	require.NoError(t, err)
	tests := []struct {
		url  string
		want bucketurl.Location
	}{
		{"mem://", bucketurl.Location{Scheme: "mem"}},
		{"file:///var/lib/transcripts", bucketurl.Location{Scheme: "file", Dir: "/var/lib/transcripts"}},
		{"file://localhost/var/lib/t/", bucketurl.Location{Scheme: "file", Dir: "/var/lib/t"}},
		{"file://./data", bucketurl.Location{Scheme: "file", Dir: filepath.Join(wd, "data")}},
		{"file://../data/x", bucketurl.Location{Scheme: "file", Dir: filepath.Join(filepath.Dir(wd), "data", "x")}},
		{"s3://transcripts", bucketurl.Location{Scheme: "s3",
			S3: s3bucket.Config{Bucket: "transcripts", Endpoint: bucketurl.DefaultS3Endpoint}}},
		{"s3://transcripts/prod/eu/?endpoint=127.0.0.1:9000&insecure=true&region=eu-1&create=true&timeout=5s",
			bucketurl.Location{Scheme: "s3", Prefix: "prod/eu", S3: s3bucket.Config{
				Bucket: "transcripts", Endpoint: "127.0.0.1:9000", Insecure: true, Region: "eu-1",
				Create: true, RequestTimeout: 5 * time.Second}}},
		{"s3://transcripts/p?check=false", bucketurl.Location{Scheme: "s3", Prefix: "p",
			S3: s3bucket.Config{Bucket: "transcripts", Endpoint: bucketurl.DefaultS3Endpoint, NoCheck: true}}},
		{"s3://transcripts/p?check=true", bucketurl.Location{Scheme: "s3", Prefix: "p",
			S3: s3bucket.Config{Bucket: "transcripts", Endpoint: bucketurl.DefaultS3Endpoint}}},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			got, err := bucketurl.Parse(tt.url)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestParse_Errors(t *testing.T) {
	tests := []struct {
		url     string
		wantMsg string
	}{
		{"", "no scheme"},
		{"/var/lib/x", "no scheme"},
		{"gs://bucket", `unknown scheme "gs"`},
		{"mem://host", "mem takes no"},
		{"mem://?x=1", "mem takes no"},
		{"file://", "empty directory"},
		{"file://remote/dir", "remote host"},
		{"file:///d?sync=1", "no parameters"},
		{"s3://", "no bucket"},
		{"s3://b/a//b", "bad prefix"},
		{"s3://b/../x", "bad prefix"},
		{"s3://b?endpoint=http://h:9000", "endpoint must be"},
		{"s3://b?insecure=maybe", "insecure must be"},
		{"s3://b?timeout=soon", "timeout must be"},
		{"s3://b?check=later", "check must be"},
		{"s3://b?check=false&create=true", "create=true needs the check"},
		{"s3://b?region=a&region=b", "given 2 times"},
		{"s3://b?secret_key=hunter2", "unknown parameter"},
		{"s3://AKIAEXAMPLE:hunter2@b/p", "credentials in the URL"},
		{"s3://b#frag", "fragment"},
		{"s3://b/%zz", "malformed"},
		{"s3://b/p", `bucket name "b"`},
		{"s3://a..b/p", `bucket name "a..b"`},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			_, err := bucketurl.Parse(tt.url)
			require.ErrorContains(t, err, tt.wantMsg)
			require.NotContains(t, err.Error(), "hunter2", "errors must not echo secrets")
			require.NotContains(t, err.Error(), "AKIAEXAMPLE")
		})
	}
}

func TestRedact(t *testing.T) {
	tests := []struct{ in, want string }{
		{"s3://b/p?endpoint=h:9000&insecure=true", "s3://b/p?endpoint=h:9000&insecure=true"},
		{"s3://user:hunter2@b/p", "s3://b/p"},
		{"s3://b/p?secret_key=hunter2&region=x", "s3://b/p?secret_key=REDACTED&region=x"},
		{"s3://b/p?X-Amz-Signature=abc", "s3://b/p?X-Amz-Signature=REDACTED"},
		{"s3://u:hunter2@b/%zz", "s3://REDACTED"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, bucketurl.Redact(tt.in))
	}
}

func TestOpen(t *testing.T) {
	b, prefix, err := bucketurl.Open(t.Context(), "mem://")
	require.NoError(t, err)
	require.IsType(t, &membucket.Bucket{}, b)
	require.Empty(t, prefix)

	dir := filepath.Join(t.TempDir(), "store")
	b, prefix, err = bucketurl.Open(t.Context(), "file://"+dir)
	require.NoError(t, err)
	require.IsType(t, &filebucket.Bucket{}, b)
	require.Empty(t, prefix)
	require.DirExists(t, dir)

	_, _, err = bucketurl.Open(t.Context(), "ftp://x")
	require.Error(t, err)
}

func TestOpen_S3(t *testing.T) {
	endpoint, _, _ := s3test.S3Endpoint(t)
	url := "s3://bucketurl-open-test/team/a/?create=true&insecure=true&region=us-east-1&endpoint=" + endpoint
	b, prefix, err := bucketurl.Open(t.Context(), url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.(*s3bucket.Bucket).Close() })
	require.Equal(t, "team/a", prefix)
	require.NoError(t, b.Put(t.Context(), prefix+"/k", strings.NewReader("v"), 1, bucket.PutOptions{}))
	require.NoError(t, b.Delete(t.Context(), prefix+"/k"))
}
