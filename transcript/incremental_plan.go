package transcript

import (
	"strconv"
	"strings"

	"github.com/transcriptstore/transcript/segment"
)

// planner decides which new compacted segments a reader already holds.
type planner struct {
	have   SegmentSet
	listed map[string]SegmentInfo
	metas  map[string]segment.Meta // new compacted segments whose metadata was read
	state  map[string]int8         // covered memo: 1 yes, -1 no, 2 being decided
}

// inputs returns the relative keys of the inputs of the new compacted segment rel
// that a compacted segment of its level supersedes (lower levels only).
func (p *planner) inputs(rel string) []string {
	m, ok := p.metas[rel]
	if !ok {
		return nil
	}
	lv := p.listed[rel].Level
	var out []string
	for _, in := range m.Inputs {
		if k := sessionRelKey(in); relLevel(k) < lv {
			out = append(out, k)
		}
	}
	return out
}

// covered reports whether the reader holds every entry of segment rel: it is in
// have, or it is a listed compacted segment whose inputs are all covered.
func (p *planner) covered(rel string) bool {
	if p.have.Has(rel) {
		return true
	}
	switch p.state[rel] {
	case 1:
		return true
	case -1, 2:
		return false
	}
	m, ok := p.metas[rel]
	if !ok || len(m.Inputs) == 0 {
		p.state[rel] = -1
		return false
	}
	p.state[rel] = 2
	ins := p.inputs(rel)
	ok = len(ins) == len(m.Inputs)
	for _, k := range ins {
		if !ok {
			break
		}
		ok = p.covered(k)
	}
	if ok {
		p.state[rel] = 1
	} else {
		p.state[rel] = -1
	}
	return ok
}

// cheaperByInputs reports whether the entries of compacted segment rel that the
// reader lacks are all in listed level-0 inputs, few (at most one round of parallel
// fetches) and together smaller than the compacted segment itself.
func (p *planner) cheaperByInputs(rel string, limit int) bool {
	m, ok := p.metas[rel]
	if !ok || len(m.Inputs) == 0 {
		return false
	}
	ins := p.inputs(rel)
	if len(ins) != len(m.Inputs) {
		return false
	}
	var n int
	var size int64
	for _, k := range ins {
		if p.covered(k) {
			continue
		}
		in, ok := p.listed[k]
		if !ok || in.Level != 0 {
			return false
		}
		n++
		size += in.Size
	}
	return n <= limit && size < p.listed[rel].Size
}

// relLevel returns the level of a relative segment key ("L{n}/..."), or -1.
func relLevel(rel string) int {
	lv, _, ok := strings.Cut(sessionRelKey(rel), "/")
	if !ok || !strings.HasPrefix(lv, "L") {
		return -1
	}
	n, err := strconv.Atoi(lv[1:])
	if err != nil {
		return -1
	}
	return n
}
