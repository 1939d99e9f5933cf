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
	return getInto(ctx, client, url, token, new(bytes.Buffer))
}

// getInto is GetBody reading the body into buf (emptied first), whose bytes it
// returns: a client reading pages one after another reuses one buffer.
func getInto(ctx context.Context, client *http.Client, url, token string, buf *bytes.Buffer) ([]byte, error) {
	buf.Reset()
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
	if resp.ContentLength > 0 {
		// ReadFrom wants MinRead bytes free to see the end: without them it
		// would copy the whole body into a buffer twice the size.
		buf.Grow(int(resp.ContentLength) + bytes.MinRead)
	}
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &StatusError{URL: url, Code: resp.StatusCode, Body: bytes.Clone(buf.Bytes())}
	}
	return buf.Bytes(), nil
}

// Page is what a PageDecoder reads of a page of GET /v1/sessions/{id}/entries.
type Page struct {
	Entries    int // how many entries the page holds
	NextSeq    int // its nextSeq
	EntryCount int // its entryCount: the session's length when it was answered
}

// PageDecoder reads the page that starts at b[at] (an answer of GET
// /v1/sessions/{id}/entries, or the "page" of GET /v1/sessions/{id}?entries=N)
// and returns the offset where it ends.
type PageDecoder func(b []byte, at int) (Page, int, error)

// ScanPage is the PageDecoder of the bench: it splits a page into its entries
// with one scan of its fields (jsonscan), as Store.ReadAll scans each stored
// entry once (the TypeScript adapter parses a page with JSON.parse).
func ScanPage(b []byte, at int) (Page, int, error) {
	var p Page
	end, err := jsonscan.ScanFieldsAt(b, at, func(key []byte, at int) (int, error) {
		if string(key) == "entries" {
			return jsonscan.EachElementAt(b, at, func([]byte, int) { p.Entries++ })
		}
		end, err := jsonscan.SkipValue(b, at)
		if err == nil {
			switch string(key) {
			case "nextSeq":
				p.NextSeq, err = strconv.Atoi(string(b[at:end]))
			case "entryCount":
				p.EntryCount, err = strconv.Atoi(string(b[at:end]))
			}
		}
		return end, err
	})
	return p, end, err
}

// DecodePage is the PageDecoder that decodes a page with encoding/json into
// json.RawMessage values, which scans every entry twice more than ScanPage and
// copies it: what a Go client using encoding/json pays.
func DecodePage(b []byte, at int) (Page, int, error) {
	var p struct {
		Entries    []json.RawMessage
		NextSeq    int
		EntryCount int
	}
	dec := json.NewDecoder(bytes.NewReader(b[at:]))
	if err := dec.Decode(&p); err != nil {
		return Page{}, 0, err
	}
	return Page{Entries: len(p.Entries), NextSeq: p.NextSeq, EntryCount: p.EntryCount}, at + int(dec.InputOffset()), nil
}

// FirstPage is what ReadPaged asks the open to answer with the metadata
// (?entries=FirstPage): more than any server's page size, so the server's
// largest page.
const FirstPage = 1 << 20

// ReadPaged reads session id through the server at base as the TypeScript
// adapter does: its metadata with the first page (GET
// /v1/sessions/{id}?entries=…), then every further page (GET
// /v1/sessions/{id}/entries?after=…, each split by decode) until one reaches
// the entryCount it reports, or is empty (a page whose nextSeq does not
// advance is an error). A page is answered with what the bucket holds when it
// reaches the end of the server's handle, so the page that reaches its
// entryCount ends the read as an empty page after it would, one round trip
// sooner. It returns the number of entries the pages held; when the metadata's
// entryCount differs, the error is ErrCountMismatch.
func ReadPaged(ctx context.Context, client *http.Client, base, token, id string, decode PageDecoder) (int, error) {
	data, err := GetBody(ctx, client, fmt.Sprintf("%s/v1/sessions/%s?entries=%d", base, id, FirstPage), token)
	if err != nil {
		return 0, err
	}
	count, p, err := decodeOpen(data, decode)
	if err != nil {
		return 0, fmt.Errorf("metadata of %s: %w", id, err)
	}
	got := 0
	var buf bytes.Buffer // each page's body, read into the last one's buffer
	for after := 0; ; {
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
		data, err := getInto(ctx, client, fmt.Sprintf("%s/v1/sessions/%s/entries?after=%d", base, id, after), token, &buf)
		if err != nil {
			return got, err
		}
		if p, _, err = decode(data, 0); err != nil {
			return got, fmt.Errorf("page after %d of %s: %w", after, id, err)
		}
	}
	if got != count {
		return got, fmt.Errorf("%w: %s: %d entries in its pages, %d in its metadata", ErrCountMismatch, id, got, count)
	}
	return got, nil
}

// decodeOpen reads the entryCount of an answer of GET /v1/sessions/{id}?entries=N
// and, with decode, its page (an error when it has none).
func decodeOpen(data []byte, decode PageDecoder) (count int, p Page, err error) {
	paged := false
	err = jsonscan.ScanFields(data, func(key []byte, at int) (int, error) {
		if string(key) == "page" {
			var end int
			var err error
			p, end, err = decode(data, at)
			paged = true
			return end, err
		}
		end, err := jsonscan.SkipValue(data, at)
		if err == nil && string(key) == "entryCount" {
			count, err = strconv.Atoi(string(data[at:end]))
		}
		return end, err
	})
	if err == nil && !paged {
		err = errors.New("no page in the answer")
	}
	return count, p, err
}
