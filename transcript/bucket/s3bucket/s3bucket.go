// Package s3bucket is the bucket.Bucket on S3 and S3-compatible servers (MinIO),
// built on github.com/minio/minio-go/v7. It is the only package of the store that
// imports minio-go.
//
// # Writes
//
// Put is one PUT request with "If-None-Match: *" (create-only), never a multipart
// upload: minio-go v7.4.1 does not send the precondition with
// CompleteMultipartUpload, so a multipart upload could overwrite. A single PUT is
// also atomic: a source that fails or comes up short aborts the request, and the
// server stores nothing. Objects are therefore limited to one PUT (5 GiB on AWS),
// and a Put of unknown size (-1) is buffered in memory up to
// Config.MaxBufferedPut.
//
// PutOptions.Checksum travels as user metadata (bucket.MetaChecksum). The client
// retries 5xx responses, so a retry can meet its own first attempt: when the server
// answers 412 Precondition Failed, Put reads the stored object's checksum and
// returns nil if it equals PutOptions.Checksum, bucket.ErrExists otherwise.
//
// # Reads and listings
//
// A missing key is bucket.ErrNotFound. Get and Stat return the stored checksum;
// List does not (S3 listings carry no user metadata), so its ObjectInfo.Checksum
// is empty. S3 returns the keys and the common prefixes of one listing page as two
// separate sorted lists, so a delimited List gathers its results and sorts them
// before calling fn; a recursive List streams.
//
// List sends its ListObjectsV2 requests itself, signed by the client (a
// presigned URL) and through its transport, and reads their answers with a
// scanner of its own: minio-go's encoding/xml spent about 20 µs a key, more than
// the request of a 1,000-key page took. An answer the scanner does not read as
// encoding/xml would goes to encoding/xml; an answer whose root is not
// ListBucketResult (a proxy's error page sent with 200) is an error, not an
// empty listing.
//
// Secrets never appear in errors or logs: Config.String redacts them.
package s3bucket

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/transcriptstore/transcript/transcript/bucket"
)

var _ bucket.Bucket = (*Bucket)(nil)

// Bucket is one S3 bucket. It is safe for concurrent use.
type Bucket struct {
	cfg       Config
	client    *minio.Client
	transport *http.Transport
	clock     *serverClock
	// http sends the listing requests (List) that the client signs, through
	// the client's transport; it follows no redirect.
	http *http.Client
	// anonymous is set when the bucket has no credentials: its listing
	// requests are not signed (minio-go presigns nothing for them).
	anonymous bool
}

// New connects to the bucket cfg names, creating it if cfg.Create is set, and
// checks that it exists, unless cfg.NoCheck is set.
func New(ctx context.Context, cfg Config) (*Bucket, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	transport, err := minio.DefaultTransport(!cfg.Insecure)
	if err != nil {
		return nil, fmt.Errorf("open s3 bucket %s: %w", cfg.Bucket, err)
	}
	// A read of a large session keeps up to 64 GETs in flight and a restore more;
	// minio-go keeps 16 idle connections per host, so every request above that
	// would close its connection and the next would dial (and, over TLS,
	// handshake) again. Keep as many idle as the transport may hold in all.
	transport.MaxIdleConnsPerHost = max(transport.MaxIdleConnsPerHost, transport.MaxIdleConns)
	clock := &serverClock{}
	client, err := minio.New(cfg.Endpoint, &minio.Options{
		Creds:      credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, ""),
		Secure:     !cfg.Insecure,
		Region:     cfg.Region,
		Transport:  clockTransport{inner: transport, clock: clock},
		MaxRetries: cfg.MaxRetries + 1, // minio-go counts attempts
	})
	if err != nil {
		return nil, fmt.Errorf("open s3 bucket %s: %w", cfg.Bucket, err)
	}
	// The client holds the credentials; the bucket keeps no copy of the secret, so
	// that no way of formatting a Bucket (or a value holding one) can print it.
	kept := cfg
	kept.SecretKey = ""
	b := &Bucket{cfg: kept, client: client, transport: transport, clock: clock,
		anonymous: cfg.AccessKey == "" || cfg.SecretKey == "", http: &http.Client{
			Transport:     clockTransport{inner: transport, clock: clock},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}}
	if cfg.NoCheck {
		return b, nil
	}
	if err := b.ensureBucket(ctx); err != nil {
		b.Close()
		return nil, fmt.Errorf("open s3 bucket %s: %w", cfg.Bucket, err)
	}
	return b, nil
}

// ErrNoBucket is returned (wrapped) by New when the bucket does not exist and
// Config.Create is not set. It is bucket.ErrNoBucket, which every request to a
// bucket deleted since wraps too.
var ErrNoBucket = bucket.ErrNoBucket

func (b *Bucket) ensureBucket(ctx context.Context) error {
	ctx, cancel := b.timeout(ctx)
	defer cancel()
	ok, err := b.client.BucketExists(ctx, b.cfg.Bucket)
	if err != nil && !b.cfg.Create && errors.Is(classify(ctx, err), bucket.ErrAccessDenied) {
		// A least-privilege role (deploy/iam) may list only under its prefix, which
		// does not let it ask whether the bucket exists (HEAD, whose answer has no
		// body). A GET of a key outside every layout answers with a code: a refusal
		// or "no such key" means the server knows these credentials and the bucket;
		// wrong credentials or a missing bucket are reported.
		body, _, gerr := b.getObject(ctx, accessProbeKey, minio.GetObjectOptions{})
		if gerr == nil {
			body.Close()
		}
		switch minio.ToErrorResponse(gerr).Code {
		case "AccessDenied", "NoSuchKey":
			return nil
		}
		if gerr == nil {
			return nil
		}
		return classify(ctx, gerr)
	}
	if err != nil {
		return classify(ctx, err)
	}
	if ok {
		return nil
	}
	if !b.cfg.Create {
		return ErrNoBucket
	}
	err = b.client.MakeBucket(ctx, b.cfg.Bucket, minio.MakeBucketOptions{Region: b.cfg.Region})
	if code := minio.ToErrorResponse(err).Code; code == "BucketAlreadyOwnedByYou" {
		return nil // created concurrently
	}
	return err
}

// Close releases idle connections. The Bucket must not be used afterwards.
func (b *Bucket) Close() error {
	b.transport.CloseIdleConnections()
	return nil
}

// Name returns the bucket name.
func (b *Bucket) Name() string { return b.cfg.Bucket }

// String describes the bucket by its configuration, without secrets.
func (b *Bucket) String() string { return "s3bucket.Bucket{" + b.cfg.String() + "}" }

// Client returns the underlying minio-go client, for tests and tools.
func (b *Bucket) Client() *minio.Client { return b.client }

// timeout derives the context of one request.
func (b *Bucket) timeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, b.cfg.RequestTimeout)
}

// Get opens key. The request timeout covers reading the body until Close.
func (b *Bucket) Get(ctx context.Context, key string) (io.ReadCloser, bucket.ObjectInfo, error) {
	if err := check(ctx, key); err != nil {
		return nil, bucket.ObjectInfo{}, fmt.Errorf("get %s: %w", key, err)
	}
	rctx, cancel := b.timeout(ctx)
	body, oi, err := b.getObject(rctx, key, minio.GetObjectOptions{})
	if err != nil {
		cancel()
		return nil, bucket.ObjectInfo{}, fmt.Errorf("get %s: %w", key, classify(ctx, err))
	}
	return &object{body: body, ctx: ctx, cancel: cancel}, info(oi), nil
}

// getObject sends one GET of key and returns its body and the metadata from the
// response's headers. It is the only way this package reads an object:
// minio.Client.GetObject returns a lazy object that, asked for its metadata
// before the first read, sends a HEAD and then a GET for the body (two requests
// one after the other, and a HEAD is billed like a GET), and runs a goroutine
// per object to feed its reads.
func (b *Bucket) getObject(ctx context.Context, key string, opts minio.GetObjectOptions) (io.ReadCloser, minio.ObjectInfo, error) {
	body, oi, _, err := minio.Core{Client: b.client}.GetObject(ctx, b.cfg.Bucket, key, opts)
	return body, oi, err
}

// object is the body of one GET. Its reads classify errors like every other call,
// and Close ends the request's context.
type object struct {
	body   io.ReadCloser
	ctx    context.Context
	cancel context.CancelFunc
}

func (o *object) Read(p []byte) (int, error) {
	n, err := o.body.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		err = classify(o.ctx, err)
	}
	return n, err
}

func (o *object) Close() error {
	err := o.body.Close()
	o.cancel()
	return err
}

// Stat returns key's metadata with its checksum.
func (b *Bucket) Stat(ctx context.Context, key string) (bucket.ObjectInfo, error) {
	if err := check(ctx, key); err != nil {
		return bucket.ObjectInfo{}, fmt.Errorf("stat %s: %w", key, err)
	}
	rctx, cancel := b.timeout(ctx)
	defer cancel()
	oi, err := b.client.StatObject(rctx, b.cfg.Bucket, key, minio.StatObjectOptions{})
	if err != nil {
		return bucket.ObjectInfo{}, fmt.Errorf("stat %s: %w", key, classify(ctx, err))
	}
	return info(oi), nil
}

// Delete removes key; S3 answers success for a missing key.
func (b *Bucket) Delete(ctx context.Context, key string) error {
	if err := check(ctx, key); err != nil {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	rctx, cancel := b.timeout(ctx)
	defer cancel()
	err := b.client.RemoveObject(rctx, b.cfg.Bucket, key, minio.RemoveObjectOptions{})
	if err != nil {
		err = classify(ctx, err)
		if errors.Is(err, bucket.ErrNotFound) {
			return nil
		}
		return fmt.Errorf("delete %s: %w", key, err)
	}
	return nil
}

// check reports an ended context or an invalid key.
func check(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return bucket.ValidateKey(key)
}

// accessProbeKey is the key that ensureBucket reads to tell a refusal from wrong
// credentials; no store ever writes it.
const accessProbeKey = "transcript-access-probe"

// errNoDate reports a server whose answers carry no Date header.
var errNoDate = errors.New("the server's answers carry no Date header")

// classify maps minio-go errors to the bucket sentinels, keeping the original in
// the chain. ctx is the caller's context: if it ended, its error is reported.
func classify(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		if errors.Is(err, cerr) {
			return err
		}
		return fmt.Errorf("%w (%w)", cerr, err)
	}
	resp := minio.ToErrorResponse(err)
	switch {
	case resp.Code == "NoSuchKey" || resp.Code == "NoSuchObject":
		return fmt.Errorf("%w (%w)", bucket.ErrNotFound, err)
	case resp.Code == "NoSuchBucket":
		// The bucket was deleted (a HEAD's answer has no body: minio-go names
		// it NoSuchKey unless the server says more, as MinIO does).
		return fmt.Errorf("%w (%w)", bucket.ErrNoBucket, err)
	case resp.Code == "PreconditionFailed" || resp.StatusCode == http.StatusPreconditionFailed:
		// A 412: callers map it to what the operation means (bucket.ErrExists for
		// a create-only PUT).
		return fmt.Errorf("%w (%w)", bucket.ErrPreconditionFailed, err)
	case resp.Code == "AccessDenied" || resp.StatusCode == http.StatusForbidden:
		return fmt.Errorf("%w (%w)", bucket.ErrAccessDenied, err)
	case unavailable(resp, err):
		return fmt.Errorf("%w (%w)", bucket.ErrUnavailable, err)
	}
	return err
}

// unavailable reports an error that says the server cannot answer now, for
// bucket.ErrUnavailable: S3's own 503 (SlowDown, ServiceUnavailable; MinIO's
// XMinioServerNotInitialized while it starts), which minio-go answers once its
// retries are spent, and errors of reaching it (a net.Error: refused, reset,
// unresolved, timed out) or of the request timeout (the caller's context, which
// classify checks first, had not ended).
func unavailable(resp minio.ErrorResponse, err error) bool {
	switch resp.Code {
	case "SlowDown", "ServiceUnavailable", "XMinioServerNotInitialized":
		return true
	}
	var ne net.Error
	return resp.StatusCode == http.StatusServiceUnavailable || errors.As(err, &ne) ||
		errors.Is(err, context.DeadlineExceeded)
}

// info converts minio-go's ObjectInfo.
func info(oi minio.ObjectInfo) bucket.ObjectInfo {
	return bucket.ObjectInfo{
		Key:      oi.Key,
		Size:     oi.Size,
		ModTime:  oi.LastModified,
		ETag:     oi.ETag,
		Checksum: checksum(oi.UserMetadata),
	}
}

// checksum finds bucket.MetaChecksum in user metadata, whatever its case.
func checksum(meta minio.StringMap) string {
	if v, ok := meta[bucket.MetaChecksum]; ok {
		return v
	}
	for k, v := range meta {
		if strings.EqualFold(k, bucket.MetaChecksum) || strings.EqualFold(k, "X-Amz-Meta-"+bucket.MetaChecksum) {
			return v
		}
	}
	return ""
}
