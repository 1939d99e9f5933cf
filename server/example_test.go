package server_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/transcriptstore/transcript/repository"
	"github.com/transcriptstore/transcript/server"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// A server over an in-memory bucket, behind a proxy that names the owner in
// headers: a client creates a strict session, appends at the head it saw, and
// loses a second append at the same, now stale, head.
func Example() {
	store, _ := transcript.New(transcript.Config{Bucket: membucket.New()})
	defer store.Close()
	repos, _ := repository.NewService(store, repository.Config{})
	srv, err := server.New(server.Config{Repositories: repos, Auth: server.HeaderAuth{}})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()

	call := func(method, path, body string) {
		req, _ := http.NewRequest(method, ts.URL+path, bytes.NewBufferString(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Transcript-Tenant", "acme")
		req.Header.Set("X-Transcript-User", "alice")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		if resp.StatusCode >= 400 {
			fmt.Printf("%d %s", resp.StatusCode, out)
			return
		}
		fmt.Println(resp.StatusCode)
	}
	call("POST", "/v1/sessions", `{"id":"s1","cwd":"/w"}`)
	call("POST", "/v1/sessions/s1/entries", `{"expectedHead":null,"entries":[
		{"type":"message","id":"u1","parentId":null,"message":{"role":"user","content":"hi"}}]}`)
	call("POST", "/v1/sessions/s1/entries", `{"expectedHead":null,"entries":[
		{"type":"message","id":"u2","parentId":null,"message":{"role":"user","content":"hello?"}}]}`)
	call("POST", "/v1/sessions/s1/entries", `{"expectedHead":"u1","entries":[{"type":"message","id":"n","parentId":5}]}`)
	// Output:
	// 201
	// 200
	// 409 {"error":{"code":"stale_head","message":"the expected head is not the committed head","head":"u1"}}
	// 400 {"error":{"code":"invalid_entry","message":"entry 0: invalid: invalid entry: entry \"n\": \"parentId\" 5 is neither a string nor null","index":0}}
}
