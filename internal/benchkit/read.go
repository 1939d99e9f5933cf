package benchkit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/transcriptstore/transcript/internal/jsonscan"
)

// StatusError is the error of GetBody for an answer other than 200 OK.
type StatusError struct {
	URL  string // the URL requested
	Code int    // the answer's status code
	Body []byte // the answer's body
}

// Error returns "GET url: code body".
func (e *StatusError) Error() string {
	return fmt.Sprintf("GET %s: %d %s", e.URL, e.Code, e.Body)
}

// ErrCountMismatch is the error of ReadPaged when the pages hold another number
// of entries than the session's metadata says.
var ErrCountMismatch = errors.New("benchkit: pages and metadata disagree on the entry count")

// GetBody sends GET url through client with the bearer token and returns the
// answer's body, read into a buffer of its Content-Length when the server sends
// one; an answer other than 200 OK is a *StatusError.
func GetBody(ctx context.Context, client *http.Client, url, token string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	if resp.ContentLength > 0 {
		// ReadFrom wants MinRead bytes free to see the end: without them it
		// would copy the whole body into a buffer twice the size.
		buf.Grow(int(resp.ContentLength) + bytes.MinRead)
	}
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &StatusError{URL: url, Code: resp.StatusCode, Body: buf.Bytes()}
	}
	return buf.Bytes(), nil
}

// Page is what a PageDecoder reads of a page of GET /v1/sessions/{id}/entries.
type Page struct {
	Entries    int // how many entries the page holds
	NextSeq    int // its nextSeq
	EntryCount int // its entryCount: the session's length when it was answered
}

// PageDecoder reads a page of GET /v1/sessions/{id}/entries.
type PageDecoder func(page []byte) (Page, error)

// ScanPage is the PageDecoder of the bench: it splits a page into its entries
// with one scan of its fields (jsonscan), as Store.ReadAll scans each stored
// entry once (the TypeScript adapter parses a page with JSON.parse).
func ScanPage(page []byte) (Page, error) {
	var p Page
	err := jsonscan.ScanFields(page, func(key []byte, at int) (int, error) {
		if string(key) == "entries" {
			return jsonscan.EachElementAt(page, at, func([]byte, int) { p.Entries++ })
		}
		end, err := jsonscan.SkipValue(page, at)
		if err == nil {
			switch string(key) {
			case "nextSeq":
				p.NextSeq, err = strconv.Atoi(string(page[at:end]))
			case "entryCount":
				p.EntryCount, err = strconv.Atoi(string(page[at:end]))
			}
		}
		return end, err
	})
	return p, err
}

// DecodePage is the PageDecoder that decodes a page with encoding/json into
// json.RawMessage values, which scans every entry twice more than ScanPage and
// copies it: what a Go client using encoding/json pays.
func DecodePage(page []byte) (Page, error) {
	var p struct {
		Entries    []json.RawMessage
		NextSeq    int
		EntryCount int
	}
	if err := json.Unmarshal(page, &p); err != nil {
		return Page{}, err
	}
	return Page{Entries: len(p.Entries), NextSeq: p.NextSeq, EntryCount: p.EntryCount}, nil
}

// ReadPaged reads session id through the server at base as the TypeScript
// adapter does: its metadata (GET /v1/sessions/{id}), then every page (GET
// /v1/sessions/{id}/entries?after=…, from 0, each split by decode) until one
// reaches the entryCount it reports, or is empty (a page whose nextSeq does not
// advance is an error). A page is answered with what the bucket holds when it
// reaches the end of the server's handle, so the page that reaches its
// entryCount ends the read as an empty page after it would, one round trip
// sooner. It returns the number of entries the pages held; when the metadata's
// entryCount differs, the error is ErrCountMismatch.
func ReadPaged(ctx context.Context, client *http.Client, base, token, id string, decode PageDecoder) (int, error) {
	data, err := GetBody(ctx, client, base+"/v1/sessions/"+id, token)
	if err != nil {
		return 0, err
	}
	var meta struct{ EntryCount int }
	if err := json.Unmarshal(data, &meta); err != nil {
		return 0, fmt.Errorf("metadata of %s: %w", id, err)
	}
	got := 0
	for after := 0; ; {
		data, err := GetBody(ctx, client, fmt.Sprintf("%s/v1/sessions/%s/entries?after=%d", base, id, after), token)
		if err != nil {
			return got, err
		}
		p, err := decode(data)
		if err != nil {
			return got, fmt.Errorf("page after %d of %s: %w", after, id, err)
		}
		if p.Entries == 0 {
			break
		}
		if p.NextSeq <= after {
			return got, fmt.Errorf("page after %d of %s: nextSeq %d does not advance", after, id, p.NextSeq)
		}
		got += p.Entries
		after = p.NextSeq
		if after >= p.EntryCount {
			break
		}
	}
	if got != meta.EntryCount {
		return got, fmt.Errorf("%w: %s: %d entries in its pages, %d in its metadata", ErrCountMismatch, id, got, meta.EntryCount)
	}
	return got, nil
}
