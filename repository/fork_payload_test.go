package repository_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/repository"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// payloadLooks is a bucket that counts the GETs and HEADs of payload objects.
type payloadLooks struct {
	payloadGets
	heads atomic.Int32
}

func (b *payloadLooks) Stat(ctx context.Context, key string) (bucket.ObjectInfo, error) {
	if strings.Contains(key, "/payloads/") {
		b.heads.Add(1)
	}
	return b.payloadGets.Stat(ctx, key)
}

// TestFork_ReadsNoPayload: Repository.Fork by id (at an image, at the reply
// after it, empty; strict or not) fetches no payload object, looks at none and
// stores none: it reads the source as stored and copies its references. The
// handle it returns reads the fork byte for byte, and takes appends.
func TestFork_ReadsNoPayload(t *testing.T) {
	data := func(seed int) string {
		return base64.StdEncoding.EncodeToString([]byte(strings.Repeat(fmt.Sprintf("png%d", seed%10), transcript.DefaultPayloadThreshold/4)))
	}
	img := fmt.Appendf(nil, `{"type":"message","id":"m1","parentId":null,"timestamp":"2026-03-01T12:00:00.000Z","message":{"role":"user","content":[{"type":"image","data":%q,"mimeType":"image/png"}]}}`, data(1))
	reply := []byte(`{"type":"message","id":"m2","parentId":"m1","timestamp":"2026-03-01T12:00:01.000Z","message":{"role":"assistant","content":[{"type":"text","text":"a cat"}]}}`)
	img2 := fmt.Appendf(nil, `{"type":"message","id":"m3","parentId":"m2","timestamp":"2026-03-01T12:00:02.000Z","message":{"role":"user","content":[{"type":"image","data":%q,"mimeType":"image/png"}]}}`, data(2))
	raws := map[string][]byte{"m1": img, "m2": reply, "m3": img2}
	for _, be := range backends {
		for _, tc := range []struct {
			name   string
			strict bool
			at     string
			want   []string
		}{
			{"at the image", false, "m1", []string{"m1"}},
			{"at the last image", false, "m3", []string{"m1", "m2", "m3"}},
			{"strict, at the reply", true, "m2", []string{"m1", "m2"}},
			{"strict, at the last image", true, "m3", []string{"m1", "m2", "m3"}},
			{"empty", false, "", nil},
		} {
			t.Run(be.name+"/"+tc.name, func(t *testing.T) {
				ctx := context.Background()
				b := &payloadLooks{payloadGets: payloadGets{Bucket: be.new(t)}}
				e := newEnv(t, b)
				r := e.repo(alice)
				s, err := r.Create(ctx, repository.CreateOptions{Strict: tc.strict, Cwd: "/w"})
				require.NoError(t, err)
				require.NoError(t, s.Append(ctx, img, reply))
				require.NoError(t, s.Append(ctx, img2))
				before := payloadObjects(t, b)
				b.n.Store(0)
				b.heads.Store(0)

				fork, err := r.Fork(ctx, s.ID(), tc.at)
				require.NoError(t, err)
				require.Zero(t, b.n.Load(), "the fork fetches no payload")
				require.Zero(t, b.heads.Load(), "the fork looks at no payload object")
				require.Equal(t, before, payloadObjects(t, b), "the fork stores no payload")
				require.Equal(t, tc.strict, fork.Strict())
				require.Equal(t, s.ID(), fork.Header().ParentSession())
				require.Equal(t, "/w", fork.Header().Cwd())
				if tc.at != "" {
					require.Equal(t, tc.at, fork.Head())
				}

				requireRaws(t, fork, tc.want, raws)
				got, err := r.Open(ctx, fork.ID())
				require.NoError(t, err)
				requireRaws(t, got, tc.want, raws)
				if tc.at == "" {
					return
				}
				next := fmt.Appendf(nil, `{"type":"message","id":"f1","parentId":%q,"timestamp":"2026-03-01T12:00:03.000Z","message":{"role":"user","content":[{"type":"text","text":"more"}]}}`, tc.at)
				require.NoError(t, fork.Append(ctx, next))
				raws := map[string][]byte{"m1": img, "m2": reply, "m3": img2, "f1": next}
				requireRaws(t, fork, append(append([]string(nil), tc.want...), "f1"), raws)
			})
		}
	}
}

// TestFork_MissingEntry: a fork at an entry the source does not hold is an
// *EntryNotFoundError (bucket.ErrNotFound), and of a session that does not
// exist bucket.ErrNotFound; neither creates a session.
func TestFork_MissingEntry(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, backends[0].new(t))
	r := e.repo(alice)
	s, err := r.Create(ctx, repository.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, s.Append(ctx, []byte(`{"type":"message","id":"m1","parentId":null,"timestamp":"2026-03-01T12:00:00.000Z","message":{"role":"user","content":[{"type":"text","text":"hi"}]}}`)))
	_, err = r.Fork(ctx, s.ID(), "nope")
	var nf *repository.EntryNotFoundError
	require.ErrorAs(t, err, &nf)
	require.ErrorIs(t, err, bucket.ErrNotFound)
	_, err = r.Fork(ctx, "00000000-0000-4000-8000-000000000000", "m1")
	require.ErrorIs(t, err, bucket.ErrNotFound)
	infos, err := r.List(ctx)
	require.NoError(t, err)
	require.Len(t, infos, 1)
}

// TestFork_WithoutPayloadsHoldsEntries: a fork whose path holds no payload
// stored outside its segment answers Page from what it wrote, with no read, as
// a handle from Open does.
func TestFork_WithoutPayloadsHoldsEntries(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, backends[0].new(t))
	r := e.repo(alice)
	s, err := r.Create(ctx, repository.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, s.Append(ctx,
		[]byte(`{"type":"message","id":"m1","parentId":null,"timestamp":"2026-03-01T12:00:00.000Z","message":{"role":"user","content":[{"type":"text","text":"hi"}]}}`),
		[]byte(`{"type":"message","id":"m2","parentId":"m1","timestamp":"2026-03-01T12:00:01.000Z","message":{"role":"assistant","content":[{"type":"text","text":"hello"}]}}`)))
	fork, err := r.Fork(ctx, s.ID(), "m1")
	require.NoError(t, err)
	page := fork.Page(0, 10)
	require.Len(t, page.Entries, 1)
	require.Equal(t, "m1", page.Entries[0].ID())
	require.Equal(t, 1, fork.Snapshot().Entries)
}

// segmentGets is a bucket that counts, besides payloadLooks' looks at payload
// objects, the GETs of everything else (segments, heads).
type segmentGets struct {
	payloadLooks
	segs atomic.Int32
}

func (b *segmentGets) Get(ctx context.Context, key string) (io.ReadCloser, bucket.ObjectInfo, error) {
	if !strings.Contains(key, "/payloads/") {
		b.segs.Add(1)
	}
	return b.payloadLooks.Get(ctx, key)
}

func (b *segmentGets) GetRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	if !strings.Contains(key, "/payloads/") {
		b.segs.Add(1)
	}
	return b.payloadLooks.GetRange(ctx, key, off, n)
}

// TestForkSession_FromWhatTheHandleHolds: a handle knows the references its
// entries were stored with, however it came to hold them (its own appends, an
// open, a refresh that read another writer's segments, a fork's own handle), so
// ForkSession reads no segment of the source and no payload: the fork's
// segment holds the same entries, references included, as a fork that reads
// the source as stored (Repository.Fork), and reads back byte for byte. After
// a compaction removed the segments the handle read, the fork reads the source
// instead, with the same result.
func TestForkSession_FromWhatTheHandleHolds(t *testing.T) {
	data := func(seed int) string {
		return base64.StdEncoding.EncodeToString([]byte(strings.Repeat(fmt.Sprintf("jpg%d", seed%10), transcript.DefaultPayloadThreshold/4)))
	}
	entry := func(id, parent, content string) []byte {
		p := "null"
		if parent != "" {
			p = fmt.Sprintf("%q", parent)
		}
		return fmt.Appendf(nil, `{"type":"message","id":%q,"parentId":%s,"timestamp":"2026-03-01T12:00:00.000Z","message":{"role":"user","content":%s}}`, id, p, content)
	}
	img := func(id, parent string, seed int) []byte {
		return entry(id, parent, fmt.Sprintf(`[{"type":"text","text":"look"},{"type":"image","data":%q,"mimeType":"image/jpeg"}]`, data(seed)))
	}
	two := entry("m4", "m3", fmt.Sprintf(`[{"type":"image","data":%q,"mimeType":"image/jpeg"},{"type":"image","data":%q,"mimeType":"image/jpeg"}]`, data(4), data(5)))
	raws := map[string][]byte{
		"m1": img("m1", "", 1),
		"m2": entry("m2", "m1", `"no image"`),
		"m3": img("m3", "m2", 3),
		"m4": two,
		"m5": img("m5", "m4", 1), // the image of m1 again
	}
	all := []string{"m1", "m2", "m3", "m4", "m5"}
	for _, be := range backends {
		for _, strict := range []bool{false, true} {
			for _, how := range []string{"appended", "opened", "refreshed", "a fork's handle", "compacted"} {
				t.Run(fmt.Sprintf("%s/strict=%v/%s", be.name, strict, how), func(t *testing.T) {
					ctx := context.Background()
					b := &segmentGets{payloadLooks: payloadLooks{payloadGets: payloadGets{Bucket: be.new(t)}}}
					e := newEnv(t, b)
					r := e.repo(alice)
					s, err := r.Create(ctx, repository.CreateOptions{Strict: strict, Cwd: "/w"})
					require.NoError(t, err)
					require.NoError(t, s.Append(ctx, raws["m1"], raws["m2"]))
					src := s
					switch how {
					case "opened", "compacted":
						require.NoError(t, s.Append(ctx, raws["m3"], raws["m4"]))
						require.NoError(t, s.Append(ctx, raws["m5"]))
						src, err = r.Open(ctx, s.ID())
						require.NoError(t, err)
					case "refreshed":
						src, err = r.Open(ctx, s.ID())
						require.NoError(t, err)
						require.NoError(t, s.Append(ctx, raws["m3"], raws["m4"]))
						require.NoError(t, s.Append(ctx, raws["m5"]))
						require.NoError(t, src.Refresh(ctx))
					case "a fork's handle":
						require.NoError(t, s.Append(ctx, raws["m3"], raws["m4"]))
						require.NoError(t, s.Append(ctx, raws["m5"]))
						src, err = r.ForkSession(ctx, s, repository.ForkOptions{At: "m5"})
						require.NoError(t, err)
					default:
						require.NoError(t, s.Append(ctx, raws["m3"], raws["m4"]))
						require.NoError(t, s.Append(ctx, raws["m5"]))
					}
					if how == "compacted" {
						_, err := e.store.Compact(ctx, s.Ref(), transcript.CompactOptions{MinSegments: 2, DeleteDelay: transcript.DeleteAtOnce})
						require.NoError(t, err)
					}
					before := payloadObjects(t, b)
					b.n.Store(0)
					b.heads.Store(0)
					b.segs.Store(0)

					fork, err := r.ForkSession(ctx, src, repository.ForkOptions{At: "m5"})
					require.NoError(t, err)
					require.Zero(t, b.n.Load(), "the fork fetches no payload")
					require.Zero(t, b.heads.Load(), "the fork looks at no payload object")
					require.Equal(t, before, payloadObjects(t, b), "the fork stores no payload")
					if how == "compacted" {
						require.NotZero(t, b.segs.Load(), "the segments the handle read are gone: the fork reads the source")
					} else {
						require.Zero(t, b.segs.Load(), "the fork reads no segment: the handle knows the references")
					}
					requireRaws(t, fork, all, raws)
					got, err := r.Open(ctx, fork.ID())
					require.NoError(t, err)
					requireRaws(t, got, all, raws)

					// The same entries as stored, references and all, as a fork
					// that reads the source as stored.
					byID, err := r.Fork(ctx, src.ID(), "m5")
					require.NoError(t, err)
					want, err := e.store.Stored().ReadAll(ctx, byID.Ref())
					require.NoError(t, err)
					have, err := e.store.Stored().ReadAll(ctx, fork.Ref())
					require.NoError(t, err)
					require.Len(t, have.Entries, len(want.Entries))
					refs := 0
					for i, w := range want.Entries {
						h := have.Entries[i]
						if w.ID == byID.Header().ID() {
							continue // the header: another session
						}
						require.Equal(t, w.ID, h.ID)
						require.Equal(t, string(w.Raw), string(h.Raw), w.ID)
						require.Equal(t, len(w.Refs), len(h.Refs), w.ID)
						for k := range w.Refs {
							require.Equal(t, w.Refs[k].Hash, h.Refs[k].Hash)
							require.Equal(t, w.Refs[k].Off, h.Refs[k].Off)
							require.Equal(t, w.Refs[k].Size, h.Refs[k].Size)
						}
						refs += len(h.Refs)
					}
					require.Equal(t, 5, refs, "m1, m3, m5 and m4's two images stay references")
				})
			}
		}
	}
}

// BenchmarkForkSession measures a whole fork of an open session of 64 turns,
// each an image of 256 KiB (a payload outside its segment) and a reply, one
// segment per turn, in memory: "held" is ForkSession of the handle that wrote
// it (it copies the references the handle knows: one listing of the source, no
// segment read), "read" is Repository.Fork by id (it reads the 64 segments as
// stored).
//
//	go test ./repository -run '^$' -bench ForkSession -cpuprofile cpu.out
func BenchmarkForkSession(b *testing.B) {
	ctx := context.Background()
	e := newEnv(b, membucket.New())
	r := e.repo(alice)
	s, err := r.Create(ctx, repository.CreateOptions{Cwd: "/w"})
	require.NoError(b, err)
	parent := "null"
	for turn := range 64 {
		data := base64.StdEncoding.EncodeToString([]byte(strings.Repeat(fmt.Sprintf("%08d", turn), 256<<10/8)))
		u, a := fmt.Sprintf("u%d", turn), fmt.Sprintf("a%d", turn)
		require.NoError(b, s.Append(ctx,
			fmt.Appendf(nil, `{"type":"message","id":%q,"parentId":%s,"timestamp":"2026-03-01T12:00:00.000Z","message":{"role":"user","content":[{"type":"image","data":%q,"mimeType":"image/png"}]}}`, u, parent, data),
			fmt.Appendf(nil, `{"type":"message","id":%q,"parentId":%q,"timestamp":"2026-03-01T12:00:01.000Z","message":{"role":"assistant","content":[{"type":"text","text":"ok"}]}}`, a, u)))
		parent = fmt.Sprintf("%q", a)
	}
	b.Run("held", func(b *testing.B) {
		for b.Loop() {
			if _, err := r.ForkSession(ctx, s, repository.ForkOptions{Whole: true}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("read", func(b *testing.B) {
		for b.Loop() {
			if _, err := r.Fork(ctx, s.ID(), "a63"); err != nil {
				b.Fatal(err)
			}
		}
	})
}
