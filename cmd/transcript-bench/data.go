package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// The generator writes sessions shaped like the Pi fixtures in sessiontree/testdata
// and real Pi sessions: each turn is a user message, an assistant message with text, a
// toolCall block and usage fields, and a tool result of a few KiB (source code or
// command output). Everything derives from a seeded PCG, so every run, and the store
// and its baselines within a run, see the same bytes.

// vocab gives the prose its word frequencies; idents and paths give code and
// command output the mix of repetition and unique tokens that decides how well it
// compresses.
var (
	vocab = strings.Fields(`the a to of and in is it that for on with this be as we
		file test function error value return config parser input output handler request
		response session entry segment store bucket read write run check update fix add
		remove change missing expected got because when then before after should will can
		now first next last each every new old line path key list map slice string int`)
	idents = strings.Fields(`ctx err buf n i key val cfg req resp opts w r s b out in
		entries segs info meta ref store bucket writer reader raw line data size count`)
	dirs = strings.Fields(`src internal cmd pkg lib api server client store util`)
	exts = strings.Fields(`.go .ts .py .rs .md .json`)
)

// gen produces deterministic turns for one session.
type gen struct {
	rng    *rand.Rand
	sid    string
	parent string
	turn   int
	start  time.Time
}

// newGen returns the generator of session sid; seed selects the content.
func newGen(sid string, seed uint64) *gen {
	return &gen{rng: rand.New(rand.NewPCG(seed, 0x7a11)), sid: sid,
		start: time.Date(2026, 4, 6, 4, 0, 0, 0, time.UTC)}
}

func (g *gen) words(n int) string {
	var sb strings.Builder
	for i := range n {
		if i > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(vocab[g.rng.IntN(len(vocab))])
	}
	return sb.String()
}

func (g *gen) path() string {
	return fmt.Sprintf("%s/%s/%s_%d%s", dirs[g.rng.IntN(len(dirs))], dirs[g.rng.IntN(len(dirs))],
		idents[g.rng.IntN(len(idents))], g.rng.IntN(50), exts[g.rng.IntN(len(exts))])
}

// toolOutput returns 1–6 KiB of code or command output.
func (g *gen) toolOutput() string {
	target := 1024 + g.rng.IntN(5*1024)
	var sb strings.Builder
	code := g.rng.IntN(2) == 0
	for sb.Len() < target {
		if code {
			a, b := idents[g.rng.IntN(len(idents))], idents[g.rng.IntN(len(idents))]
			switch g.rng.IntN(4) {
			case 0:
				fmt.Fprintf(&sb, "func %s%d(%s %s) error {\n", strings.ToUpper(a[:1])+a[1:], g.rng.IntN(100), b, idents[g.rng.IntN(len(idents))])
			case 1:
				fmt.Fprintf(&sb, "\tif %s, err := %s.%s(ctx, %d); err != nil {\n\t\treturn fmt.Errorf(%q, err)\n\t}\n", a, b, idents[g.rng.IntN(len(idents))], g.rng.IntN(1000), g.words(3)+": %w")
			case 2:
				fmt.Fprintf(&sb, "\t// %s\n", g.words(6+g.rng.IntN(10)))
			default:
				fmt.Fprintf(&sb, "\t%s = append(%s, %s[%d:])\n}\n", a, a, b, g.rng.IntN(64))
			}
		} else {
			switch g.rng.IntN(3) {
			case 0:
				fmt.Fprintf(&sb, "=== RUN   Test%s/%s_%d\n", strings.ToUpper(vocab[g.rng.IntN(len(vocab))]), vocab[g.rng.IntN(len(vocab))], g.rng.IntN(100))
			case 1:
				fmt.Fprintf(&sb, "--- PASS: Test%s (%d.%02ds)\n", idents[g.rng.IntN(len(idents))], g.rng.IntN(3), g.rng.IntN(100))
			default:
				fmt.Fprintf(&sb, "%s:%d:%d: %s\n", g.path(), 1+g.rng.IntN(900), 1+g.rng.IntN(80), g.words(5+g.rng.IntN(8)))
			}
		}
	}
	return sb.String()
}

func (g *gen) id() string { return fmt.Sprintf("%08x", g.rng.Uint32()) }

// header returns the session header line (the first entry of the first batch).
func (g *gen) header() []byte {
	return fmt.Appendf(nil, `{"type":"session","version":3,"id":%q,"timestamp":%q,"cwd":"/work/%s"}`,
		g.sid, g.start.Format("2006-01-02T15:04:05.000Z"), g.sid)
}

// next returns the three entries of the next turn (user, assistant with a toolCall
// and usage, tool result), each one JSON line without "\n", chained by parentId.
func (g *gen) next() [][]byte {
	t := g.start.Add(time.Duration(g.turn) * 30 * time.Second)
	g.turn++
	ts := func(k int) string {
		return t.Add(time.Duration(k) * time.Second).Format("2006-01-02T15:04:05.000Z")
	}
	ms := func(k int) int64 { return t.Add(time.Duration(k) * time.Second).UnixMilli() }
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	parent := "null"
	if g.parent != "" {
		parent = q(g.parent)
	}
	uid, aid, rid := g.id(), g.id(), g.id()
	call := fmt.Sprintf("call_%s", g.id())
	tool := [...]string{"read", "bash", "edit", "grep"}[g.rng.IntN(4)]
	in := 2000 + g.turn*350 + g.rng.IntN(500)
	out := 40 + g.rng.IntN(400)
	cache := in - 200 - g.rng.IntN(200)
	user := fmt.Sprintf(`{"type":"message","id":%q,"parentId":%s,"timestamp":%q,"message":{"role":"user","content":[{"type":"text","text":%s}],"timestamp":%d}}`,
		uid, parent, ts(0), q(g.words(8+g.rng.IntN(40))), ms(0))
	assistant := fmt.Sprintf(`{"type":"message","id":%q,"parentId":%q,"timestamp":%q,"message":{"role":"assistant","content":[{"type":"text","text":%s},{"type":"toolCall","id":%q,"name":%q,"arguments":{"path":%q}}],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":%d,"output":%d,"cacheRead":%d,"cacheWrite":0,"totalTokens":%d,"cost":{"input":%.6f,"output":%.6f,"cacheRead":%.6f,"cacheWrite":0,"total":%.6f}},"stopReason":"toolUse","timestamp":%d}}`,
		aid, uid, ts(1), q(g.words(15+g.rng.IntN(60))), call, tool, g.path(), in, out, cache, in+out,
		float64(in-cache)*3e-6, float64(out)*15e-6, float64(cache)*3e-7, float64(in-cache)*3e-6+float64(out)*15e-6+float64(cache)*3e-7, ms(1))
	result := fmt.Sprintf(`{"type":"message","id":%q,"parentId":%q,"timestamp":%q,"message":{"role":"toolResult","toolCallId":%q,"toolName":%q,"content":[{"type":"text","text":%s}],"isError":false,"timestamp":%d}}`,
		rid, aid, ts(2), call, tool, q(g.toolOutput()), ms(2))
	g.parent = rid
	return [][]byte{[]byte(user), []byte(assistant), []byte(result)}
}

// session returns the batches of a session of turns turns, one batch per turn,
// the first starting with the header.
func session(sid string, seed uint64, turns int) [][][]byte {
	g := newGen(sid, seed)
	out := make([][][]byte, turns)
	for i := range out {
		out[i] = g.next()
	}
	if turns > 0 {
		out[0] = append([][]byte{g.header()}, out[0]...)
	}
	return out
}

// flatten concatenates batches into one list of entries.
func flatten(batches [][][]byte) [][]byte {
	var out [][]byte
	for _, b := range batches {
		out = append(out, b...)
	}
	return out
}

// chunk splits entries into n nearly equal, contiguous, non-empty parts.
func chunk(entries [][]byte, n int) [][][]byte {
	n = max(1, min(n, len(entries)))
	out := make([][][]byte, n)
	for i := range n {
		out[i] = entries[i*len(entries)/n : (i+1)*len(entries)/n]
	}
	return out
}

// jsonlSize is the size of entries as JSONL (each line followed by "\n").
func jsonlSize(entries [][]byte) int64 {
	var n int64
	for _, e := range entries {
		n += int64(len(e)) + 1
	}
	return n
}
