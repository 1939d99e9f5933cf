package transcript_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// payloadModel is what the property test wrote: every version of every entry of
// each session, by id.
type payloadModel struct {
	versions map[string]map[string][][]byte // session -> id -> distinct versions
	order    map[string][]string            // session -> ids in write order
}

func (m *payloadModel) wrote(session string, raws ...[]byte) {
	for _, raw := range raws {
		e, _ := transcript.ParseEntry(raw)
		vs := m.versions[session]
		if vs == nil {
			vs = map[string][][]byte{}
			m.versions[session] = vs
		}
		if len(vs[e.ID]) == 0 {
			m.order[session] = append(m.order[session], e.ID)
		}
		known := false
		for _, v := range vs[e.ID] {
			known = known || bytes.Equal(v, raw)
		}
		if !known {
			vs[e.ID] = append(vs[e.ID], bytes.Clone(raw))
		}
	}
}

// payloadRun drives random operations on a store that takes payloads out, and one
// that keeps them inline, over one bucket.
type payloadRun struct {
	t       *testing.T
	r       *rand.Rand
	s       *transcript.Store
	inline  *transcript.Store
	writers []*transcript.Writer
	model   payloadModel
	images  []string
	texts   []string
	n       int
}

func (p *payloadRun) ref(session string) transcript.TranscriptRef {
	return transcript.TranscriptRef{Namespace: "prop", AgentID: "a", SessionID: session}
}

// newEntry returns a new entry under parent: plain, an image from a small pool (so
// payloads are shared), or a tool result, some below the threshold.
func (p *payloadRun) newEntry(parent string) []byte {
	p.n++
	id := fmt.Sprintf("e%d", p.n)
	switch p.r.IntN(4) {
	case 0:
		return entry(id, parent)
	case 1, 2:
		return imageEntry(id, parent, p.images[p.r.IntN(len(p.images))])
	default:
		return toolEntry(id, orRoot(parent), p.texts[p.r.IntN(len(p.texts))])
	}
}

func orRoot(parent string) string {
	if parent == "" {
		return "root"
	}
	return parent
}

// step runs one random operation.
func (p *payloadRun) step(ctx context.Context) {
	t := p.t
	sessions := make([]string, 0, len(p.model.order))
	for s := range p.model.order {
		sessions = append(sessions, s)
	}
	sortStrings(sessions)
	pick := func() string { return sessions[p.r.IntN(len(sessions))] }
	store := p.s
	if p.r.IntN(4) == 0 {
		store = p.inline
	}
	w := p.writers[p.r.IntN(len(p.writers))]
	switch op := p.r.IntN(10); {
	case op < 4 || len(sessions) == 0: // append to a session, new or not
		session := fmt.Sprintf("s%d", p.r.IntN(3))
		ids := p.model.order[session]
		var batch [][]byte
		for range 1 + p.r.IntN(3) {
			parent := ""
			if len(ids) > 0 {
				parent = ids[p.r.IntN(len(ids))]
			}
			e := p.newEntry(parent)
			batch = append(batch, e)
			pe, _ := transcript.ParseEntry(e)
			ids = append(ids, pe.ID)
		}
		p.write(ctx, store, session, batch, w)
	case op < 5: // another version of an entry: a conflict, or the same bytes again
		session := pick()
		id := p.model.order[session][p.r.IntN(len(p.model.order[session]))]
		vs := p.model.versions[session][id]
		raw := vs[p.r.IntN(len(vs))]
		if p.r.IntN(2) == 0 {
			e, _ := transcript.ParseEntry(raw)
			raw = imageEntry(id, e.ParentID, p.images[p.r.IntN(len(p.images))])
		}
		p.write(ctx, store, session, [][]byte{raw}, w)
	case op < 7: // a fork: the entries of a session copied into a new one
		from := pick()
		res, err := p.s.ReadAll(ctx, p.ref(from))
		require.NoError(t, err)
		p.n++
		to := fmt.Sprintf("f%d", p.n)
		if p.r.IntN(2) == 0 {
			p.write(ctx, store, to, res.Raw(), w)
			break
		}
		// Copying references: the entries as stored, no payload read.
		stored, err := p.s.Stored().ReadAll(ctx, p.ref(from))
		require.NoError(t, err)
		require.Len(t, stored.Entries, len(res.Entries))
		_, err = store.AppendStored(ctx, p.ref(to), "prop", stored.Entries, w)
		require.NoError(t, err)
		p.model.wrote(to, res.Raw()...)
	case op < 9:
		_, err := p.s.Compact(ctx, p.ref(pick()), transcript.CompactOptions{MinSegments: 2, DeleteDelay: transcript.DeleteAtOnce})
		require.NoError(t, err)
	default:
		_, err := p.s.CollectPayloads(ctx, "prop", transcript.PayloadGCOptions{DeleteDelay: transcript.DeleteAtOnce})
		require.NoError(t, err)
	}
}

func (p *payloadRun) write(ctx context.Context, s *transcript.Store, session string, batch [][]byte, w *transcript.Writer) {
	if p.r.IntN(2) == 0 {
		_, err := s.AppendSegment(ctx, p.ref(session), batch, w)
		require.NoError(p.t, err)
	} else {
		obj, err := s.PrepareSegment(p.ref(session), batch, w)
		require.NoError(p.t, err)
		require.NoError(p.t, s.PutSegment(ctx, obj.Info.Key, obj.Data))
	}
	p.model.wrote(session, batch...)
}

// check reads every session every way and holds each read to the model: every id
// once among the entries, its bytes one version written, the other versions as
// losers; ReadLean, ReadNew and the segments' union the same bytes.
func (p *payloadRun) check(ctx context.Context) {
	t := p.t
	for session, vs := range p.model.versions {
		r := p.ref(session)
		res, err := p.s.ReadAll(ctx, r)
		require.NoError(t, err)
		require.Len(t, res.Entries, len(vs), session)
		all := append(append([]transcript.Entry{}, res.Entries...), res.Losers...)
		got := map[string][][]byte{}
		for _, e := range all {
			got[e.ID] = append(got[e.ID], e.Raw)
		}
		for id, want := range vs {
			require.ElementsMatch(t, want, got[id], "%s: %s", session, id)
		}
		lean, err := p.s.ReadLean(ctx, r)
		require.NoError(t, err)
		require.Equal(t, len(res.Entries), lean.Len())
		for i, e := range res.Entries {
			require.Equal(t, string(e.Raw), string(lean.Raw(i)), "ReadLean %s", e.ID)
		}
		inc, err := p.s.ReadNew(ctx, r, transcript.SegmentSet{})
		require.NoError(t, err)
		require.Equal(t, res.Raw(), inc.Raw(), "ReadNew")
		other, err := p.inline.ReadAll(ctx, r)
		require.NoError(t, err)
		require.Equal(t, res.Raw(), other.Raw(), "a store that writes inline reads the same")
		for _, info := range res.Segments {
			seg, err := p.s.ReadSegment(ctx, info.Key)
			require.NoError(t, err)
			for _, raw := range seg.Entries {
				e, _ := transcript.ParseEntry(raw)
				require.Contains(t, vs[e.ID], raw, "ReadSegment %s", e.ID)
			}
		}
	}
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && strings.Compare(s[j-1], s[j]) > 0; j-- {
			s[j-1], s[j] = s[j], s[j-1]
		}
	}
}

// TestPayload_Property runs seeded random sessions with large payloads, shared
// payloads, forks, compactions, conflicts, writers that keep payloads inline and
// payload collections, and checks after every step that every read returns the
// entries byte for byte as written. Bounded by steps and time.
func TestPayload_Property(t *testing.T) {
	budget := map[string]struct{ seeds, steps int }{"mem": {6, 40}, "file": {2, 25}}
	for name, newBucket := range testBackends() {
		b, ok := budget[name]
		if !ok {
			b = struct{ seeds, steps int }{1, 15} // the S3 engines
		}
		for seed := range uint64(b.seeds) {
			t.Run(fmt.Sprintf("%s/seed%d", name, seed), func(t *testing.T) {
				ctx := context.Background()
				bk := newBucket(t)
				p := newPayloadRun(t, bk, seed)
				deadline := time.Now().Add(30 * time.Second)
				for i := 0; i < b.steps && time.Now().Before(deadline); i++ {
					p.step(ctx)
					p.check(ctx)
				}
			})
		}
	}
}

func newPayloadRun(t *testing.T, b bucket.Bucket, seed uint64) *payloadRun {
	p := &payloadRun{t: t, r: rand.New(rand.NewPCG(seed, 7)),
		s:      gcStore(t, b),
		inline: newStore(t, b, transcript.Config{PayloadThreshold: -1}),
		model:  payloadModel{versions: map[string]map[string][][]byte{}, order: map[string][]string{}}}
	for i := range 3 {
		p.writers = append(p.writers, newWriter(t, fmt.Sprintf("w%d", i)))
		p.images = append(p.images, imageData(seed*10+uint64(i), testThreshold/2+i*testThreshold))
		p.texts = append(p.texts, strings.Repeat(fmt.Sprintf("out %d \"q\"\n", i), testThreshold/12*(i+1)))
	}
	return p
}
