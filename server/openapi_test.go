package server_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/transcriptstore/transcript/server"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// TestOpenAPIDescribesEveryRoute checks that every route of the router is in
// openapi.yaml, and that the document describes no route the router lacks.
func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	data, err := os.ReadFile("openapi.yaml")
	require.NoError(t, err)
	var doc struct {
		OpenAPI string                    `yaml:"openapi"`
		Paths   map[string]map[string]any `yaml:"paths"`
	}
	require.NoError(t, yaml.Unmarshal(data, &doc))
	require.True(t, strings.HasPrefix(doc.OpenAPI, "3."))
	documented := map[server.Route]bool{}
	for path, ops := range doc.Paths {
		for method := range ops {
			if method != "parameters" {
				documented[server.Route{Method: strings.ToUpper(method), Path: path}] = true
			}
		}
	}
	ts := newServer(t, membucket.New(), server.Config{})
	served := map[server.Route]bool{}
	for _, r := range ts.srv.Routes() {
		served[r] = true
		require.True(t, documented[r], "route %s %s is not in openapi.yaml", r.Method, r.Path)
	}
	for r := range documented {
		require.True(t, served[r], "openapi.yaml describes %s %s, which the router does not serve", r.Method, r.Path)
	}
}

// openAPIDoc is the part of openapi.yaml the tests read.
type openAPIDoc struct {
	Unmatched map[string]any            `yaml:"x-unmatched"`
	Paths     map[string]map[string]any `yaml:"paths"`
	Comps     struct {
		Schemas struct {
			Error struct {
				Properties struct {
					Error struct {
						Properties struct {
							Code struct {
								Enum []string `yaml:"enum"`
							} `yaml:"code"`
						} `yaml:"properties"`
					} `yaml:"error"`
				} `yaml:"properties"`
			} `yaml:"Error"`
		} `yaml:"schemas"`
	} `yaml:"components"`
}

func readOpenAPI(t *testing.T) openAPIDoc {
	t.Helper()
	data, err := os.ReadFile("openapi.yaml")
	require.NoError(t, err)
	var doc openAPIDoc
	require.NoError(t, yaml.Unmarshal(data, &doc))
	return doc
}

// TestOpenAPIListsEveryErrorAndStatus: the error codes of the document are the
// server's constants, every /v1 operation lists the statuses any of them can
// answer (401, 500, 503, 504), every operation with a body those of the body
// checks (400, 408, 413, 415), and unmatched requests their 404 and 405.
func TestOpenAPIListsEveryErrorAndStatus(t *testing.T) {
	doc := readOpenAPI(t)
	var codes []string
	for _, c := range server.ErrorCodes() {
		codes = append(codes, string(c))
	}
	require.ElementsMatch(t, codes, doc.Comps.Schemas.Error.Properties.Error.Properties.Code.Enum)
	require.Contains(t, doc.Unmatched, "404")
	require.Contains(t, doc.Unmatched, "405")
	checked := 0
	for path, ops := range doc.Paths {
		for method, op := range ops {
			if method == "parameters" {
				continue
			}
			opMap, _ := op.(map[string]any)
			responses, _ := opMap["responses"].(map[string]any)
			want := []string{}
			if strings.HasPrefix(path, "/v1/") {
				want = append(want, "401", "500", "503", "504")
			}
			if _, ok := opMap["requestBody"]; ok {
				want = append(want, "400", "408", "413", "415")
			}
			for _, status := range want {
				require.Contains(t, responses, status, "%s %s lists %s", method, path, status)
			}
			checked++
		}
	}
	require.Equal(t, 11, checked)
}

// tsErrorCodes returns the keys of serverErrorCodes, the TypeScript client's
// mapping of the server's error codes (clients/typescript/src/errors.ts).
func tsErrorCodes(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("../clients/typescript/src/errors.ts")
	require.NoError(t, err)
	_, rest, ok := strings.Cut(string(data), "export const serverErrorCodes = {")
	require.True(t, ok, "errors.ts declares serverErrorCodes")
	body, _, ok := strings.Cut(rest, "} as const")
	require.True(t, ok, "serverErrorCodes ends with } as const")
	var keys []string
	for _, m := range regexp.MustCompile(`(?m)^\s*([a-z_]+):`).FindAllStringSubmatch(body, -1) {
		keys = append(keys, m[1])
	}
	return keys
}

// TestErrorCodesNamedAlike: the server's error code constants, the codes
// openapi.yaml lists and those the TypeScript client maps are the same set, so
// no code a client can get goes unmapped or undocumented.
func TestErrorCodesNamedAlike(t *testing.T) {
	var codes []string
	for _, c := range server.ErrorCodes() {
		codes = append(codes, string(c))
	}
	require.ElementsMatch(t, codes, readOpenAPI(t).Comps.Schemas.Error.Properties.Error.Properties.Code.Enum, "openapi.yaml")
	ts := tsErrorCodes(t)
	require.NotEmpty(t, ts)
	require.ElementsMatch(t, codes, ts, "clients/typescript/src/errors.ts")
}
