package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/server"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/metricbucket"
)

// countingBucket wraps b with the request-counting metrics wrapper; requests
// returns how many bucket requests were made so far.
func countingBucket(t testing.TB, b bucket.Bucket) (bucket.Bucket, func() int) {
	reg := prometheus.NewRegistry()
	m, err := metricbucket.NewMetrics(reg)
	require.NoError(t, err)
	return m.Wrap(b, "test"), func() int {
		mfs, err := reg.Gather()
		require.NoError(t, err)
		n := 0.0
		for _, mf := range mfs {
			if mf.GetName() != metricbucket.MetricRequests {
				continue
			}
			for _, m := range mf.GetMetric() {
				n += m.GetCounter().GetValue()
			}
		}
		return int(n)
	}
}

// readAll reads session id page by page, pageSize entries at a time, as the
// adapter does, and returns the ids and the number of pages read.
func readAll(t *testing.T, c *client, id string, pageSize int) (ids []string, pages int) {
	t.Helper()
	for after := 0; pages < 10_000; pages++ {
		p := decode[page](t, must(c.do("GET", fmt.Sprintf("/v1/sessions/%s/entries?after=%d&limit=%d", id, after, pageSize), nil)))
		for _, e := range p.Entries {
			ids = append(ids, decode[struct{ ID string }](t, e).ID)
		}
		if len(p.Entries) == 0 {
			return ids, pages + 1
		}
		after = p.NextSeq
	}
	t.Fatal("too many pages")
	return nil, 0
}

// TestReadsCostWhatIsNew reads sessions through a server whose bucket counts its
// requests, while another server on the same bucket writes them: the server
// that did not see the appends answers what the bucket holds, a page read
// costs one request once the session is open (the head object, or one listing
// of the newest keys), so reading a session page by page costs O(n) in total,
// and a read of an unchanged session costs a LIST or less.
func TestReadsCostWhatIsNew(t *testing.T) {
	for _, be := range backends[:2] {
		for _, strict := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/strict=%v", be.name, strict), func(t *testing.T) {
				b := be.new(t)
				cb, requests := countingBucket(t, b)
				reader := newServer(t, cb, server.Config{}).as(t, "acme", "alice")
				writer := newServer(t, b, server.Config{}).as(t, "acme", "alice")
				must(writer.do("POST", "/v1/sessions", map[string]any{"id": "s", "cwd": "/w", "strict": strict}))
				const n, pageSize = 40, 7
				var want []string
				for i := range n {
					id, parent := fmt.Sprintf("m%02d", i), ""
					if i > 0 {
						parent = want[i-1]
					}
					must(writer.do("POST", "/v1/sessions/s/entries", appendReq(parent, msg(id, parent, "user", id))))
					want = append(want, id)
				}

				m := decode[metadata](t, must(reader.do("GET", "/v1/sessions/s", nil)))
				require.Equal(t, n, m.EntryCount)
				require.Equal(t, "/w", m.Cwd)
				before := requests()
				got, pages := readAll(t, reader, "s", pageSize)
				require.Equal(t, want, got)
				require.LessOrEqual(t, requests()-before, pages, "one request per page once open")

				before = requests()
				code, body := reader.do("GET", "/v1/sessions/s", nil)
				require.Equal(t, http.StatusOK, code, string(body))
				require.LessOrEqual(t, requests()-before, 1, "a read of an unchanged session costs a LIST or less")

				// Appends through the other server: read at once, for what is new.
				for i := n; i < n+3; i++ {
					id, parent := fmt.Sprintf("m%02d", i), want[i-1]
					must(writer.do("POST", "/v1/sessions/s/entries", appendReq(parent, msg(id, parent, "user", id))))
					want = append(want, id)
				}
				before = requests()
				p := decode[page](t, must(reader.do("GET", fmt.Sprintf("/v1/sessions/s/entries?after=%d", n), nil)))
				require.Len(t, p.Entries, 3)
				require.Equal(t, str(want[len(want)-1]), p.Head)
				require.LessOrEqual(t, requests()-before, 1+3, "the head or a listing, and the 3 new segments")
			})
		}
	}
}

// TestStaleHeadAndForkReadWhatIsNew: a stale-head 409 reports the committed head,
// and a fork tells an unknown entry from an unknown session, each without reading
// the session again.
func TestStaleHeadAndForkReadWhatIsNew(t *testing.T) {
	b := backends[0].new(t)
	cb, requests := countingBucket(t, b)
	c := newServer(t, cb, server.Config{}).as(t, "acme", "alice")
	must(c.do("POST", "/v1/sessions", map[string]any{"id": "s"}))
	parent := ""
	for i := range 30 {
		id := fmt.Sprintf("m%02d", i)
		must(c.do("POST", "/v1/sessions/s/entries", appendReq(parent, msg(id, parent, "user", id))))
		parent = id
	}
	before := requests()
	code, body := c.do("POST", "/v1/sessions/s/entries", appendReq("m03", msg("x", "m03", "user", "late")))
	require.Equal(t, http.StatusConflict, code, string(body))
	require.Equal(t, str("m29"), decode[errResp](t, body).Error.Head)
	require.LessOrEqual(t, requests()-before, 2, "the head, read to append and to report it")

	before = requests()
	code, body = c.do("POST", "/v1/sessions/s/fork", map[string]any{"entryId": "ghost"})
	require.Equal(t, http.StatusUnprocessableEntity, code, string(body))
	require.Equal(t, server.CodeInvalidForkTarget, decode[errResp](t, body).Error.Code)
	require.LessOrEqual(t, requests()-before, 1, "the head only")
	var e struct{ Error struct{ EntryID string } }
	require.NoError(t, json.Unmarshal(body, &e))
	require.Equal(t, "ghost", e.Error.EntryID)
}

// TestOpenWithEntries: GET /v1/sessions/{id}?entries=N answers the metadata and,
// as "page", what GET .../entries?limit=N answers (capped by the page size),
// with no bucket request beyond the open's; without it, or with entries=0, the
// metadata alone; a bad value is a 400 naming the field.
func TestOpenWithEntries(t *testing.T) {
	for _, strict := range []bool{true, false} {
		t.Run(fmt.Sprintf("strict=%v", strict), func(t *testing.T) {
			b := backends[0].new(t)
			cb, requests := countingBucket(t, b)
			reader := newServer(t, cb, server.Config{MaxPage: 5}).as(t, "acme", "alice")
			writer := newServer(t, b, server.Config{}).as(t, "acme", "alice")
			must(writer.do("POST", "/v1/sessions", map[string]any{"id": "s", "cwd": "/w", "strict": strict}))
			parent := ""
			for i := range 8 {
				id := fmt.Sprintf("m%02d", i)
				must(writer.do("POST", "/v1/sessions/s/entries", appendReq(parent, msg(id, parent, "user", id))))
				parent = id
			}
			plain := must(reader.do("GET", "/v1/sessions/s", nil))
			require.NotContains(t, string(plain), `"page"`)
			require.Equal(t, string(plain), string(must(reader.do("GET", "/v1/sessions/s?entries=0", nil))))

			for _, n := range []int{3, 8, 100} {
				fresh := newServer(t, cb, server.Config{MaxPage: 5}).as(t, "acme", "alice")
				before := requests()
				data := must(fresh.do("GET", fmt.Sprintf("/v1/sessions/s?entries=%d", n), nil))
				opened := requests() - before
				var got struct {
					metadata
					Page *page `json:"page"`
				}
				require.NoError(t, json.Unmarshal(data, &got), string(data))
				require.Equal(t, decode[metadata](t, plain), got.metadata, "the metadata is the open's")
				require.NotNil(t, got.Page)
				want := decode[page](t, must(reader.do("GET", fmt.Sprintf("/v1/sessions/s/entries?limit=%d", n), nil)))
				require.Equal(t, want, *got.Page, "the page is the entries route's")
				require.Len(t, got.Page.Entries, min(n, 5), "capped by the page size")

				other := newServer(t, cb, server.Config{MaxPage: 5}).as(t, "acme", "alice")
				before = requests()
				must(other.do("GET", "/v1/sessions/s", nil))
				require.Equal(t, requests()-before, opened, "the page costs no bucket request")
			}
			code, body := reader.do("GET", "/v1/sessions/s?entries=-1", nil)
			require.Equal(t, http.StatusBadRequest, code, string(body))
			require.Contains(t, string(body), `"field":"entries"`)
		})
	}
}

// TestPagesBoundedByBytes: a page ends before the entry that would take its
// entries past Config.MaxPageBytes, and holds one entry however large; read
// page by page, and through the open's first page, every entry comes once and
// in order.
func TestPagesBoundedByBytes(t *testing.T) {
	b := backends[0].new(t)
	const bound = 1000
	c := newServer(t, b, server.Config{MaxPageBytes: bound}).as(t, "acme", "alice")
	must(c.do("POST", "/v1/sessions", map[string]any{"id": "s", "cwd": "/w", "strict": true}))
	var want []string
	var sizes []int
	parent := ""
	for i := range 12 {
		id := fmt.Sprintf("m%02d", i)
		text := strings.Repeat("x", 100+50*i) // the last entries alone pass the bound
		if i == 11 {
			text = strings.Repeat("y", 2*bound)
		}
		e := msg(id, parent, "user", text)
		must(c.do("POST", "/v1/sessions/s/entries", appendReq(parent, e)))
		want, sizes, parent = append(want, id), append(sizes, len(e)), id
	}
	// The first page: as many entries as fit (at least one).
	fit, size := 0, 0
	for _, n := range sizes {
		if size += n + 1; size > bound && fit > 0 {
			break
		}
		fit++
	}
	p := decode[page](t, must(c.do("GET", "/v1/sessions/s/entries", nil)))
	require.Len(t, p.Entries, fit)
	require.Equal(t, fit, p.NextSeq)
	total := 0
	for _, e := range p.Entries {
		total += len(e) + 1
	}
	require.LessOrEqual(t, total, bound)

	got, pages := readAll(t, c, "s", 100)
	require.Equal(t, want, got)
	require.Greater(t, pages, 4, "pages of at most %d bytes", bound)
	last := decode[page](t, must(c.do("GET", "/v1/sessions/s/entries?after=11", nil)))
	require.Len(t, last.Entries, 1, "an entry over the bound is a page of its own")

	var opened struct {
		Page page `json:"page"`
	}
	require.NoError(t, json.Unmarshal(must(c.do("GET", "/v1/sessions/s?entries=100", nil)), &opened))
	require.Equal(t, p, opened.Page, "the open's first page is bounded alike")
}
