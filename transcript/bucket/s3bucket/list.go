package s3bucket

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/transcriptstore/transcript/transcript/bucket"
)

// List lists with ListObjectsV2. Keys that are not valid bucket keys (written by
// other tools) are skipped.
//
// The pages are requested here rather than through minio-go's ListObjects,
// which reads each answer with encoding/xml: about 20 µs a key, so that a page
// of 1,000 keys took 55–60 ms where its request took 30 (parseListPage). Each
// request is signed by the client (a presigned URL: the client's credentials,
// region and addressing) and sent through the client's transport; a failed one
// is retried as the client retries its own.
func (b *Bucket) List(ctx context.Context, opts bucket.ListOptions, fn func(bucket.ObjectInfo) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("list %s: %w", opts.Prefix, err)
	}
	if err := bucket.ValidatePrefix(opts.Prefix); err != nil {
		return fmt.Errorf("list %s: %w", opts.Prefix, err)
	}
	var gathered []bucket.ObjectInfo // delimited listings, sorted at the end
	visit := func(item bucket.ObjectInfo) error {
		if opts.Delimited && strings.HasSuffix(item.Key, "/") {
			if bucket.ValidatePrefix(item.Key) != nil {
				return nil
			}
			item = bucket.ObjectInfo{Key: item.Key, IsPrefix: true}
		} else if bucket.ValidateKey(item.Key) != nil {
			return nil
		}
		if opts.Delimited {
			gathered = append(gathered, item)
			return nil
		}
		return fn(item)
	}
	// A first page asked for (opts.FirstPage) is a listing of its own, cut
	// after that many keys; the rest follows its last key in full pages.
	q := listQuery{prefix: opts.Prefix, delimited: opts.Delimited, startAfter: opts.StartAfter}
	if opts.FirstPage > 0 && !opts.Delimited {
		q.maxKeys = opts.FirstPage
	}
	for {
		page, err := b.requestPage(ctx, q)
		if err != nil {
			return fmt.Errorf("list %s: %w", opts.Prefix, err)
		}
		for _, o := range page.contents {
			if err := visit(bucket.ObjectInfo{Key: o.key, Size: o.size, ModTime: o.modTime, ETag: o.etag}); err != nil {
				return err
			}
		}
		for _, p := range page.prefixes {
			if err := visit(bucket.ObjectInfo{Key: p}); err != nil {
				return err
			}
		}
		if !page.truncated {
			break
		}
		if q.maxKeys > 0 && len(page.contents) > 0 {
			q.startAfter, q.maxKeys = page.contents[len(page.contents)-1].key, 0
			continue
		}
		if page.next == q.token {
			// A server that answered this token with itself would be listed
			// forever.
			return fmt.Errorf("list %s: %w", opts.Prefix, errRepeatedToken)
		}
		q.token, q.maxKeys = page.next, 0
	}
	slices.SortFunc(gathered, func(x, y bucket.ObjectInfo) int { return strings.Compare(x.Key, y.Key) })
	for _, item := range gathered {
		if err := fn(item); err != nil {
			return err
		}
	}
	return nil
}

// errRepeatedToken ends a listing whose server answered a continuation token
// with the same token.
var errRepeatedToken = errors.New("the server answered a continuation token with itself")

// listQuery is one ListObjectsV2 request.
type listQuery struct {
	prefix     string
	delimited  bool
	startAfter string
	token      string // the continuation token of the page before
	maxKeys    int    // 0: the server's page (1,000 keys)
}

// values is q as the request's query.
func (q listQuery) values() url.Values {
	v := url.Values{}
	v.Set("list-type", "2")
	v.Set("encoding-type", "url")
	v.Set("prefix", q.prefix)
	if q.delimited {
		v.Set("delimiter", "/")
	}
	if q.startAfter != "" {
		v.Set("start-after", q.startAfter)
	}
	if q.token != "" {
		v.Set("continuation-token", q.token)
	}
	if q.maxKeys > 0 {
		v.Set("max-keys", strconv.Itoa(q.maxKeys))
	}
	return v
}

// Retries of a listing request wait as minio-go's do: up to listRetryUnit
// doubled for each attempt, at most listRetryCap, less a random half.
const (
	listRetryUnit = 200 * time.Millisecond
	listRetryCap  = time.Second
	// maxListBody bounds the answer read for one page: 1,000 keys of 1,024
	// bytes each, escaped, are under 10 MiB.
	maxListBody = 64 << 20
	// presignExpiry is how long a signed listing request stays valid; it is
	// sent at once.
	presignExpiry = 5 * time.Minute
)

// requestPage requests one page, retrying as minio-go retries (network errors,
// 5xx, 429 and S3's retryable codes), all within the request timeout. Its
// errors are classified (classify).
func (b *Bucket) requestPage(ctx context.Context, q listQuery) (listPage, error) {
	rctx, cancel := b.timeout(ctx)
	defer cancel()
	v := q.values()
	for attempt := 0; ; attempt++ {
		body, retry, err := b.listOnce(rctx, v)
		if err == nil {
			return parseListPage(body)
		}
		if !retry || attempt >= b.cfg.MaxRetries || rctx.Err() != nil {
			return listPage{}, classify(ctx, err)
		}
		t := time.NewTimer(listBackoff(attempt))
		select {
		case <-t.C:
		case <-rctx.Done():
			t.Stop()
			return listPage{}, classify(ctx, err)
		}
	}
}

// listBackoff is the wait before retry attempt+1: listRetryUnit doubled for each
// attempt up to listRetryCap (200, 400, 800 ms, then the cap, whatever the number:
// a larger shift would overflow), less a random part of up to half.
func listBackoff(attempt int) time.Duration {
	wait := listRetryCap
	if attempt < 3 {
		wait = min(listRetryCap, listRetryUnit<<attempt)
	}
	return wait - rand.N(wait/2)
}

// listOnce sends one listing request and reads its answer; retry says whether
// a failure is one to try again. A failure the server names is a
// minio.ErrorResponse, as the client's own calls return.
func (b *Bucket) listOnce(ctx context.Context, v url.Values) (body []byte, retry bool, err error) {
	u, err := b.listURL(ctx, v)
	if err != nil {
		return nil, false, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, false, err
	}
	resp, err := b.http.Do(req)
	if err != nil {
		// The request's URL carries its signature, a grant to list for a few
		// minutes: the error names the bucket's path without its query.
		if ue := (*url.Error)(nil); errors.As(err, &ue) {
			ue.URL = (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
		}
		return nil, ctx.Err() == nil, err
	}
	defer resp.Body.Close()
	body, err = io.ReadAll(io.LimitReader(resp.Body, maxListBody+1))
	if err != nil {
		return nil, ctx.Err() == nil, err
	}
	if resp.StatusCode != http.StatusOK {
		er := listError(resp, body, b.cfg.Bucket)
		return nil, retryableStatus(er.StatusCode) || retryableCode(er.Code), er
	}
	if len(body) > maxListBody {
		return nil, false, fmt.Errorf("listing page over %d bytes", maxListBody)
	}
	return body, false, nil
}

// listURL is the URL of a listing request of the query v: presigned by the
// client, or, for a bucket without credentials, the bucket's path on the
// endpoint (an anonymous request needs no region, and every S3 server answers
// one in the path style).
func (b *Bucket) listURL(ctx context.Context, v url.Values) (*url.URL, error) {
	if !b.anonymous {
		return b.client.Presign(ctx, http.MethodGet, b.cfg.Bucket, "", presignExpiry, v)
	}
	u := *b.client.EndpointURL()
	u.Path, u.RawPath = "/"+b.cfg.Bucket+"/", ""
	u.RawQuery = v.Encode()
	return &u, nil
}

// listError is the error of a listing answered with status other than 200: the
// server's S3 error, or one named after the status as minio-go names it.
func listError(resp *http.Response, body []byte, bucketName string) minio.ErrorResponse {
	var er minio.ErrorResponse
	if err := xml.Unmarshal(body, &er); err != nil || er.Code == "" {
		er = minio.ErrorResponse{Code: resp.Status, Message: strings.ToValidUTF8(string(body[:min(len(body), 1024)]), "?")}
		switch resp.StatusCode {
		case http.StatusNotFound:
			er.Code = "NoSuchBucket"
		case http.StatusForbidden:
			er.Code = "AccessDenied"
		}
	}
	if er.BucketName == "" {
		er.BucketName = bucketName
	}
	er.StatusCode = resp.StatusCode
	er.Server = resp.Header.Get("Server")
	return er
}

// retryableStatus and retryableCode are the answers minio-go retries.
func retryableStatus(status int) bool {
	switch status {
	case http.StatusRequestTimeout, http.StatusTooManyRequests, 499, http.StatusInternalServerError,
		http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout, 520:
		return true
	}
	return false
}

func retryableCode(code string) bool {
	switch code {
	case "RequestError", "RequestTimeout", "Throttling", "ThrottlingException", "RequestLimitExceeded",
		"RequestThrottled", "InternalError", "ExpiredToken", "ExpiredTokenException", "SlowDown",
		"SlowDownWrite", "SlowDownRead":
		return true
	}
	return false
}
