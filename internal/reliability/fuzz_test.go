package reliability_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/repository"
	"github.com/transcriptstore/transcript/segment"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
	"github.com/transcriptstore/transcript/transcript/bucketurl"
)

// The fuzz targets of the parsers and decoders that have none in their own
// package (segment.FuzzDecode, sessiontree.FuzzLoadJSONL and
// jsonscan.FuzzEachField cover the others). .ci/run runs each for a few seconds;
// their corpora are in testdata/fuzz.

// FuzzParseKey: ParseKey never panics, and a key it accepts names a valid ref under
// the prefix, whose parts appear in the key as they are.
func FuzzParseKey(f *testing.F) {
	f.Add("p/default/a/s/L0/20260102T030405.000000001Z-w-0000000000000001-00000000deadbeef.jsonl.zst")
	f.Add("p/ns/agent/../L1/20260102T030405.000000001Z-w-0000000000000001-00000000deadbeef.jsonl.zst")
	f.Add("p/default/a/s/gc/L0/x.jsonl.zst")
	f.Add("p//a/s/L0/.jsonl.zst")
	f.Fuzz(func(t *testing.T, key string) {
		info, err := transcript.ParseKey("p", key)
		if err != nil {
			if !errors.Is(err, transcript.ErrNotSegmentKey) && !errors.Is(err, transcript.ErrInvalidRef) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if err := info.Ref.Validate(); err != nil {
			t.Fatalf("accepted key %q with an invalid ref: %v", key, err)
		}
		want := "p/" + info.Ref.Namespace + "/" + info.Ref.AgentID + "/" + info.Ref.SessionID + "/"
		if !strings.HasPrefix(key, want) || info.Key != key {
			t.Fatalf("key %q parsed to %+v", key, info)
		}
	})
}

// FuzzValidatePart: a part ValidatePart accepts is safe as one key element and one
// path element.
func FuzzValidatePart(f *testing.F) {
	for _, s := range append([]string{"ok", "a.b", "a-b_c", "ü", "%2e%2e"}, hostileNames...) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if transcript.ValidatePart("session", v) != nil {
			return
		}
		bad := v == "" || v == "." || strings.Contains(v, "..") || strings.ContainsAny(v, `/\`) ||
			!utf8.ValidString(v) || len(v) > transcript.MaxRefPartLen ||
			strings.ContainsFunc(v, func(r rune) bool { return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp) }) ||
			strings.HasPrefix(v, ".") || strings.HasSuffix(v, ".log") || v == "gc" ||
			len(v) > 1 && v[0] == 'L' && strings.Trim(v[1:], "0123456789") == ""
		if bad {
			t.Fatalf("accepted %q", v)
		}
	})
}

// FuzzParseEntry: the store's and the model's entry parsers never panic, the store
// keeps every line the model takes for an entry (one rule for id and parentId),
// and they agree on id and parent of every line both accept.
func FuzzParseEntry(f *testing.F) {
	f.Add([]byte(okEntry))
	f.Add([]byte(`{"id":"a","id":"b","parentId":null}`))
	f.Add([]byte(`{"type":"message","\u0069d":"x","parentId":"y"}`))
	f.Add([]byte(`{"type":"session","version":3,"id":"s"}`))
	f.Add([]byte("{\"type\":\"m\",\"id\":\"\xff\",\"parentId\":7}"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		_, _ = pi.ParseHeader(raw)
		a, errA := transcript.ParseEntry(raw)
		b, errB := pi.ParseEntry(raw)
		if errB == nil && errA != nil {
			// One rule (pi.Links): what the model takes for an entry, the store keeps.
			t.Fatalf("the model accepts %q, the store refuses it: %v", raw, errA)
		}
		if errA != nil || errB != nil {
			return
		}
		p, ok := b.ParentID()
		if a.ID != b.ID() || a.ParentID != p || ok != (p != "") && a.ParentID != "" {
			t.Fatalf("parsers disagree on %q: store id %q parent %q, tree id %q parent %q", raw, a.ID, a.ParentID, b.ID(), p)
		}
	})
}

// FuzzBucketURL: Parse never panics, and Redact never shows a password.
func FuzzBucketURL(f *testing.F) {
	f.Add("s3://bucket/prefix?endpoint=127.0.0.1:9000&insecure=true&create=true")
	f.Add("s3://user:hunter2secret@bucket/prefix")
	f.Add("file:///tmp/x")
	f.Add("file://./rel")
	f.Add("mem://")
	f.Add("s3://b/p?endpoint=h%00:1&timeout=-1s")
	f.Fuzz(func(t *testing.T, raw string) {
		_, _ = bucketurl.Parse(raw)
		red := bucketurl.Redact(raw)
		u, err := url.Parse(raw)
		if err != nil || u.User == nil {
			return
		}
		pw, ok := u.User.Password()
		if !ok || len(pw) < 6 {
			return
		}
		u.User = nil
		if !strings.Contains(u.String(), pw) && strings.Contains(red, pw) {
			t.Fatalf("Redact(%q) = %q shows the password", raw, red)
		}
	})
}

// FuzzStoreRead: any bytes stored under a valid segment key read back as a typed
// error or as entries, never a panic, and never disturb a neighbouring segment.
func FuzzStoreRead(f *testing.F) {
	enc, err := segment.NewEncoder()
	if err != nil {
		f.Fatal(err)
	}
	good, _, err := enc.Encode(segment.Meta{WriterID: "w"}, [][]byte{[]byte(okEntry)})
	_ = enc.Close()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add(append(bytes.Clone(good), rleBomb(128<<10)...))
	f.Add([]byte{})
	// One store for every input (creating the codecs is what would take the time);
	// each input gets a session of its own, deleted afterwards.
	b := membucket.New()
	store, err := transcript.New(transcript.Config{Bucket: b})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { store.Close() })
	w, _ := transcript.NewWriter("w")
	var n atomic.Int64
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx := context.Background()
		ref := transcript.TranscriptRef{AgentID: "a", SessionID: fmt.Sprintf("s%d", n.Add(1))}
		defer store.Delete(ctx, ref)
		info, err := store.AppendSegment(ctx, ref, [][]byte{[]byte(okEntry2)}, w)
		if err != nil {
			t.Fatal(err)
		}
		key := fmt.Sprintf("default/a/%s/L0/20260102T030405.000000000Z-evil-0000000000000001-%016x.jsonl.zst", ref.SessionID, info.Hash)
		if err := b.Put(ctx, key, bytes.NewReader(data), int64(len(data)), bucket.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		res, err := store.ReadAll(ctx, ref)
		if err != nil {
			if !typedSegmentError(err) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if !entryIDs(res)["ok2"] {
			t.Fatalf("a stored object hid the neighbouring segment's entry")
		}
	})
}

// FuzzOwnerNamespace: an owner's namespace is a valid key element, and two owners
// share one only if they are the same owner.
func FuzzOwnerNamespace(f *testing.F) {
	for i, o := range trickyOwners {
		p := trickyOwners[(i+1)%len(trickyOwners)]
		f.Add(o.Tenant, o.User, p.Tenant, p.User)
	}
	f.Fuzz(func(t *testing.T, t1, u1, t2, u2 string) {
		a, b := repository.Owner{Tenant: t1, User: u1}, repository.Owner{Tenant: t2, User: u2}
		na, errA := a.Namespace()
		nb, errB := b.Namespace()
		if errA == nil {
			if err := transcript.ValidatePart("namespace", na); err != nil {
				t.Fatalf("owner %+v: invalid namespace %q: %v", a, na, err)
			}
		}
		if errA == nil && errB == nil && na == nb && a != b {
			t.Fatalf("owners %+v and %+v share namespace %q", a, b, na)
		}
	})
}
