// Package faultbucket is test support: a fault-injecting, request-counting wrapper of
// a bucket.Bucket, the test double of the bucket layer for the tests and benchmarks of
// every layer built on it (the store, the mirror, the session tree, the commands).
package faultbucket

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/transcriptstore/transcript/transcript/bucket"
)

// ErrInjected is wrapped by every failure the wrapper injects.
var ErrInjected = errors.New("injected fault")

// Op is a set of bucket operations a fault applies to.
type Op uint8

// The operations of a bucket. A ranged read and a read with its ETag are OpGet, a
// conditional write is OpPut and a batch delete is one OpDelete, as the S3 requests
// they make are.
const (
	OpGet Op = 1 << iota
	OpStat
	OpList
	OpPut
	OpDelete
	OpReplace
	// OpWrite is every operation that changes the bucket.
	OpWrite = OpPut | OpDelete | OpReplace
	// OpAll is every operation.
	OpAll = OpGet | OpStat | OpList | OpWrite
)

// Counts are the requests a Bucket has seen, successful or not, and the bytes that
// reached the inner bucket through Put, PutIf and Replace.
type Counts struct {
	Get, Stat, List, Put, Delete, Replace int64
	// BytesUp is the payload of the Put, PutIf and Replace calls passed to the inner
	// bucket.
	BytesUp int64
}

// Requests returns the total number of requests.
func (c Counts) Requests() int64 { return c.Get + c.Stat + c.List + c.Put + c.Delete + c.Replace }

// Bucket wraps a bucket.Bucket, counts its requests and bytes, and injects faults:
// failures before or after the inner call, delays, and hangs that last until the
// call's context ends. It is safe for concurrent use. Every method of the inner bucket
// is forwarded.
type Bucket struct {
	inner bucket.Bucket

	mu       sync.Mutex
	counts   Counts
	failNext map[Op]int // per single op: calls left to fail before the inner call
	loseNext map[Op]int // per single op: calls left to fail after the inner call succeeded
	failErr  error
	delay    map[Op]time.Duration
	hang     Op
	hangDone chan struct{} // closed by Heal to release hung calls
}

var _ bucket.Bucket = (*Bucket)(nil)

// Wrap returns a Bucket around inner, with no faults.
func Wrap(inner bucket.Bucket) *Bucket {
	return &Bucket{inner: inner, failNext: map[Op]int{}, loseNext: map[Op]int{}, delay: map[Op]time.Duration{},
		hangDone: make(chan struct{})}
}

// Inner returns the wrapped bucket.
func (b *Bucket) Inner() bucket.Bucket { return b.inner }

// FailNext makes the next n calls of each operation in ops fail with err (nil: a
// plain ErrInjected) before they reach the inner bucket.
func (b *Bucket) FailNext(ops Op, n int, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, op := range single(ops) {
		b.failNext[op] = n
	}
	b.failErr = err
}

// LoseNextResponses makes the next n calls of each operation in ops reach the inner
// bucket and then fail with ErrInjected even when they succeeded, as when a response
// is lost on the network: the caller's retry then meets its own first attempt.
func (b *Bucket) LoseNextResponses(ops Op, n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, op := range single(ops) {
		b.loseNext[op] = n
	}
}

// SetDelay makes every call of the operations in ops wait d (or until its context
// ends) before it proceeds; 0 removes the delay.
func (b *Bucket) SetDelay(ops Op, d time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, op := range single(ops) {
		b.delay[op] = d
	}
}

// Hang makes every call of the operations in ops block until its context ends (it
// then fails with the context's error) or Heal is called.
func (b *Bucket) Hang(ops Op) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.hang |= ops
}

// Heal removes every fault and delay and releases hung calls. Counts are kept.
func (b *Bucket) Heal() {
	b.mu.Lock()
	defer b.mu.Unlock()
	clear(b.failNext)
	clear(b.loseNext)
	clear(b.delay)
	b.failErr = nil
	b.hang = 0
	close(b.hangDone)
	b.hangDone = make(chan struct{})
}

// Counts returns the requests and bytes seen so far.
func (b *Bucket) Counts() Counts {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.counts
}

// TakeCounts returns the counts and sets them to zero, in one step: what a test
// measures is the requests since its last TakeCounts.
func (b *Bucket) TakeCounts() Counts {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.counts
	b.counts = Counts{}
	return c
}

// ResetCounts sets every count to zero.
func (b *Bucket) ResetCounts() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.counts = Counts{}
}

func single(ops Op) []Op {
	var out []Op
	for op := OpGet; op <= OpReplace && op != 0; op <<= 1 {
		if ops&op != 0 {
			out = append(out, op)
		}
	}
	return out
}

func opName(op Op) string {
	switch op {
	case OpGet:
		return "get"
	case OpStat:
		return "stat"
	case OpList:
		return "list"
	case OpPut:
		return "put"
	case OpDelete:
		return "delete"
	case OpReplace:
		return "replace"
	}
	return "op"
}

// before counts a call of op and applies the faults due before the inner call.
func (b *Bucket) before(ctx context.Context, op Op, key string) error {
	b.mu.Lock()
	switch op {
	case OpGet:
		b.counts.Get++
	case OpStat:
		b.counts.Stat++
	case OpList:
		b.counts.List++
	case OpPut:
		b.counts.Put++
	case OpDelete:
		b.counts.Delete++
	case OpReplace:
		b.counts.Replace++
	}
	var fail error
	if b.failNext[op] > 0 {
		b.failNext[op]--
		fail = b.failErr
		if fail == nil {
			fail = ErrInjected
		} else {
			fail = fmt.Errorf("%w: %w", ErrInjected, fail)
		}
	}
	d, hang, healed := b.delay[op], b.hang&op != 0, b.hangDone
	b.mu.Unlock()

	if fail != nil {
		return fmt.Errorf("%s %s: %w", opName(op), key, fail)
	}
	if hang {
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s %s: hung: %w", opName(op), key, ctx.Err())
		case <-healed:
		}
	}
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s %s: delayed: %w", opName(op), key, ctx.Err())
		case <-t.C:
		}
	}
	return nil
}

// after applies the faults due after a successful inner call.
func (b *Bucket) after(op Op, key string, err error) error {
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.loseNext[op] > 0 {
		b.loseNext[op]--
		return fmt.Errorf("%s %s: response lost: %w", opName(op), key, ErrInjected)
	}
	return nil
}

func (b *Bucket) addBytes(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.counts.BytesUp += n
}

// Get implements bucket.Reader.
func (b *Bucket) Get(ctx context.Context, key string) (io.ReadCloser, bucket.ObjectInfo, error) {
	if err := b.before(ctx, OpGet, key); err != nil {
		return nil, bucket.ObjectInfo{}, err
	}
	rc, oi, err := b.inner.Get(ctx, key)
	if err = b.after(OpGet, key, err); err != nil && rc != nil {
		rc.Close()
		rc = nil
	}
	return rc, oi, err
}

// Stat implements bucket.Reader.
func (b *Bucket) Stat(ctx context.Context, key string) (bucket.ObjectInfo, error) {
	if err := b.before(ctx, OpStat, key); err != nil {
		return bucket.ObjectInfo{}, err
	}
	oi, err := b.inner.Stat(ctx, key)
	return oi, b.after(OpStat, key, err)
}

// List implements bucket.Reader.
func (b *Bucket) List(ctx context.Context, opts bucket.ListOptions, fn func(bucket.ObjectInfo) error) error {
	if err := b.before(ctx, OpList, opts.Prefix); err != nil {
		return err
	}
	return b.after(OpList, opts.Prefix, b.inner.List(ctx, opts, fn))
}

// Put implements bucket.Bucket.
func (b *Bucket) Put(ctx context.Context, key string, r io.Reader, size int64, opts bucket.PutOptions) error {
	if err := b.before(ctx, OpPut, key); err != nil {
		return err
	}
	cr := &bucket.CountingReader{R: r}
	err := b.inner.Put(ctx, key, cr, size, opts)
	b.addBytes(cr.N)
	return b.after(OpPut, key, err)
}

// Delete implements bucket.Bucket.
func (b *Bucket) Delete(ctx context.Context, key string) error {
	if err := b.before(ctx, OpDelete, key); err != nil {
		return err
	}
	return b.after(OpDelete, key, b.inner.Delete(ctx, key))
}

// Replace implements bucket.Replacer.
func (b *Bucket) Replace(ctx context.Context, key string, r io.Reader, size int64, opts bucket.PutOptions) error {
	if err := b.before(ctx, OpReplace, key); err != nil {
		return err
	}
	cr := &bucket.CountingReader{R: r}
	err := b.inner.Replace(ctx, key, cr, size, opts)
	b.addBytes(cr.N)
	return b.after(OpReplace, key, err)
}
