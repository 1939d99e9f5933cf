package pi_test

import (
	"fmt"

	"github.com/transcriptstore/transcript/pi"
)

// A session's entries parsed line by line, its active leaf and the context the
// model sees there. The "leaf" entry moves the active leaf back to the first
// answer, so the context leaves out the second branch.
func Example() {
	lines := []string{
		`{"type":"message","id":"u1","parentId":null,"message":{"role":"user","content":"hi"}}`,
		`{"type":"message","id":"a1","parentId":"u1","message":{"role":"assistant","content":"hello"}}`,
		`{"type":"message","id":"u2","parentId":"a1","message":{"role":"user","content":"and then?"}}`,
		`{"type":"leaf","id":"l1","parentId":null,"targetId":"a1"}`,
	}
	var entries []pi.Entry
	for _, l := range lines {
		e, err := pi.ParseEntry([]byte(l))
		if err != nil {
			panic(err)
		}
		entries = append(entries, e)
	}
	fmt.Println("active leaf:", pi.ActiveLeafID(entries))
	ctx := pi.BuildContextFrom(entries, nil)
	for _, m := range ctx.Messages {
		fmt.Println(string(m))
	}
	// Output:
	// active leaf: a1
	// {"role":"user","content":"hi"}
	// {"role":"assistant","content":"hello"}
}

// One rule decides an entry's links: a parentId that is neither a string nor
// null makes the line invalid, for the model and the store alike.
func ExampleParseLinks() {
	for _, l := range []string{
		`{"type":"message","id":"a","parentId":"p","timestamp":"2026-01-01T00:00:00.000Z"}`,
		`{"type":"message","id":"b","parentId":null}`,
		`{"type":"message","id":"c","parentId":5}`,
	} {
		links, err := pi.ParseLinks([]byte(l))
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("id %s, parent %q, timestamp %q\n", links.ID, links.ParentID, links.Timestamp)
	}
	// Output:
	// id a, parent "p", timestamp "2026-01-01T00:00:00.000Z"
	// id b, parent "", timestamp ""
	// invalid entry: entry "c": "parentId" 5 is neither a string nor null
}
