package sessiontree_test

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// TestTree_AppendContextEdit: a context edit is refused as Pi 1.6 refuses it
// (a replacement that is not null or an object with string or array content,
// an unknown target, one off the active branch or without editable content),
// stores a string for an assistant as one text block, and changes the context.
func TestTree_AppendContextEdit(t *testing.T) {
	tr, err := sessiontree.New(testConfig(t), who, "a", "s", sessiontree.HeaderOptions{})
	require.NoError(t, err)
	add := func(m string) sessiontree.Entry {
		t.Helper()
		e, err := tr.AppendMessage(json.RawMessage(m))
		require.NoError(t, err)
		return e
	}
	sys := add(`{"role":"system","content":"be brief","timestamp":1}`)
	user := add(string(msg(userMsg, "hello")))
	asst := add(string(msg(assistantMsg, "hi", "p", "m")))
	off := add(string(msg(userMsg, "elsewhere")))
	require.NoError(t, tr.Branch(asst.ID()))

	for _, tt := range []struct {
		name        string
		target      string
		replacement string
		err         error
	}{
		{"no replacement", user.ID(), ``, pi.ErrInvalidEntry},
		{"a replacement without content", user.ID(), `{}`, pi.ErrInvalidEntry},
		{"a content that is a number", user.ID(), `{"content":5}`, pi.ErrInvalidEntry},
		{"a string replacement", user.ID(), `"x"`, pi.ErrInvalidEntry},
		{"an unknown target", "nothere", `null`, bucket.ErrNotFound},
		{"a target off the active branch", off.ID(), `null`, sessiontree.ErrNotEditable},
		{"a system message", sys.ID(), `{"content":"x"}`, sessiontree.ErrNotEditable},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n := tr.Len()
			_, err := tr.AppendContextEdit(tt.target, json.RawMessage(tt.replacement))
			require.ErrorIs(t, err, tt.err)
			require.Equal(t, n, tr.Len(), "nothing appended")
		})
	}

	e, err := tr.AppendContextEdit(asst.ID(), json.RawMessage(`{"content":"edited"}`))
	require.NoError(t, err)
	ed, ok := pi.ContextEditOf(e)
	require.True(t, ok)
	require.Equal(t, `{"content":[{"type":"text","text":"edited"}]}`, string(ed.Replacement))
	_, err = tr.AppendContextEdit(user.ID(), json.RawMessage(` null `))
	require.NoError(t, err)
	c := tr.BuildContext()
	require.Len(t, c.Messages, 2)
	require.Equal(t, `{"role":"system","content":"be brief","timestamp":1}`, string(c.Messages[0]))
	require.Contains(t, string(c.Messages[1]), `"content":[{"type":"text","text":"edited"}]`)
}

// TestTree_AppendCompaction_RecordsSystemMessage: a compaction records the
// system message current at the leaf, with its own time, and the context then
// starts with it; without a system message it records none. A usage entry
// changes nothing the model sees.
func TestTree_AppendCompaction_RecordsSystemMessage(t *testing.T) {
	tr, err := sessiontree.New(testConfig(t), who, "a", "s", sessiontree.HeaderOptions{})
	require.NoError(t, err)
	first, err := tr.AppendMessage(msg(userMsg, "hello"))
	require.NoError(t, err)
	c, err := tr.AppendCompaction(sessiontree.Compaction{Summary: "s1", FirstKeptEntryID: first.ID(), TokensBefore: 1})
	require.NoError(t, err)
	require.Nil(t, pi.RecordedSystemMessage(c), "no system message yet")

	_, err = tr.AppendMessage(json.RawMessage(`{"role":"system","content":"be brief","sections":{"cwd":"/w"},"timestamp":1}`))
	require.NoError(t, err)
	before := string(tr.BuildContext().JSON())
	_, err = tr.AppendUsage("cache_warm", "ollama", "qwen3", json.RawMessage(`{"input":1}`), "")
	require.NoError(t, err)
	require.Equal(t, before, string(tr.BuildContext().JSON()), "a usage entry changes nothing")

	last, err := tr.AppendMessage(msg(userMsg, "more"))
	require.NoError(t, err)
	c, err = tr.AppendCompaction(sessiontree.Compaction{Summary: "s2", FirstKeptEntryID: last.ID(), TokensBefore: 2, Usage: json.RawMessage(`{"input":3}`)})
	require.NoError(t, err)
	at, err := time.Parse(time.RFC3339Nano, c.Timestamp())
	require.NoError(t, err)
	ms := strconv.FormatInt(at.UnixMilli(), 10)
	require.Equal(t, `{"role":"system","content":"be brief","sections":{"cwd":"/w"},"timestamp":`+ms+`}`, string(pi.RecordedSystemMessage(c)))
	got := tr.BuildContext()
	require.Len(t, got.Messages, 3)
	require.Equal(t, string(pi.RecordedSystemMessage(c)), string(got.Messages[0]))
	require.Contains(t, string(got.Messages[1]), `"role":"compactionSummary"`)
	require.Contains(t, string(got.Messages[2]), `"more"`)
}
