package server

import (
	"bytes"
	"net/http/httptest"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReadBodyOneBuffer: a body of declared length is read into one buffer of
// its size, taken from the budget before it arrives. It was read as io.ReadAll
// reads a body of unknown size, its buffer grown step by step: about three
// times the body allocated, and twice it held at the peak, for every large
// append, beyond what the body budget counted.
func TestReadBodyOneBuffer(t *testing.T) {
	const size = 8 << 20
	s := &Server{cfg: Config{MaxBodyBytes: 2 * size}.withDefaults()}
	budget := &bodyBudget{max: 4 * size, perOwner: 4 * size}
	body := bytes.Repeat([]byte(" "), size)
	body[0] = '{'
	body[size-1] = '}'
	r := httptest.NewRequest("POST", "/v1/sessions", bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	br := budget.reader(r.Body)
	br.owner = "acme~alice"
	r.Body = br
	w := httptest.NewRecorder()

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	data, ok := s.readBody(w, r)
	runtime.ReadMemStats(&after)
	require.True(t, ok, w.Body.String())
	require.Equal(t, body, data)
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(size+size/4), "bytes allocated to read a body of %d", size)
	require.Equal(t, int64(size), budget.inFlight())
	br.release()
	require.Zero(t, budget.inFlight())
}
