package pi_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/pi"
)

// TestCurrentSystemMessage: expectations printed by Pi 1.6's
// getCurrentSystemMessage for the same messages (TestPi16Oracle_SystemMessage
// in cmd/transcript compares hundreds more).
func TestCurrentSystemMessage(t *testing.T) {
	for _, tt := range []struct {
		name     string
		messages []string
		want     string
	}{
		{"a section set again keeps its place", []string{
			`{"role":"system","content":"a","sections":{"a":"1","b":"2"},"timestamp":5}`,
			`{"role":"system","content":"","sections":{"a":"3"}}`,
		}, `{"role":"system","content":"a","sections":{"a":"3","b":"2"},"timestamp":5}`},
		{"a section removed and set again comes last", []string{
			`{"role":"system","content":"a","sections":{"a":"1","b":"2"}}`,
			`{"role":"system","content":"b","sections":{"a":null}}`,
			`{"role":"system","content":"c","sections":{"a":"x"},"timestamp":7}`,
		}, `{"role":"system","content":"a\n\nb\n\nc","sections":{"b":"2","a":"x"},"timestamp":7}`},
		{"integer-like section names first; text blocks", []string{
			`{"role":"system","content":"a","sections":{"x":"1","2":"two"},"toolsAdded":[{"name":"b"}],"timestamp":3}`,
			`{"role":"user","content":"u"}`,
			`{"role":"system","content":[{"type":"text","text":"t1"},{"type":"text","text":"t2"}],"sections":{"x":null,"1":"one"},"toolsRemoved":[{"name":"b"}]}`,
		}, `{"role":"system","content":"a\n\nt1\nt2","sections":{"1":"one","2":"two"},"timestamp":3}`},
		{"tools redefined in place, removed and added again last", []string{
			`{"role":"system","content":"p","toolsAdded":[{"name":"read","v":1},{"name":"bash"}]}`,
			`{"role":"user","content":"u"}`,
			`{"role":"system","content":"","toolsAdded":[{"name":"read","v":2}],"toolsRemoved":[{"name":"bash"}]}`,
			`{"role":"system","content":"","toolsAdded":[{"name":"bash","v":3}]}`,
		}, `{"role":"system","content":"p","toolsAdded":[{"name":"read","v":2},{"name":"bash","v":3}],"timestamp":0}`},
		{"no system message", []string{
			`{"role":"user","content":"u","timestamp":1}`,
			`{"role":"assistant","content":[]}`,
		}, ``},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var ms []json.RawMessage
			for _, m := range tt.messages {
				ms = append(ms, json.RawMessage(m))
			}
			got := pi.CurrentSystemMessage(ms)
			require.Equal(t, tt.want, string(got))
			require.False(t, strings.Contains(string(got), "\n"), "one line")
		})
	}
}
