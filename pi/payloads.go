package pi

import "github.com/transcriptstore/transcript/internal/jsonscan"

// Span is the byte range [Start, End) of an entry.
type Span struct{ Start, End int }

// PayloadSpans returns where the entry raw holds large payloads: the contents,
// between the quotes and exactly as written (escapes included), of the JSON
// strings of at least min bytes that are
//
//   - the "data" of an image content block ({"type":"image","data",...}), or
//   - the "text" of a text content block of a toolResult message,
//
// in the content array of a message entry's message, of a custom_message entry,
// or of a context_edit entry's replacement. The spans come in order and never
// overlap, and never touch "id", "parentId" or "timestamp". Of keys given twice
// the last counts, as JSON.parse keeps it. raw must be one valid JSON object (an
// entry the store accepted); min must be positive. Anything else gives nil.
//
// It is the store's rule for which strings it may keep out of a segment (see
// transcript.Config.PayloadThreshold): a deterministic function of the entry's
// bytes, so that one entry gives the same spans on every writer.
func PayloadSpans(raw []byte, min int) []Span {
	if min <= 0 {
		return nil
	}
	var typ, message, content, replacement []byte
	var messageAt, contentAt, replacementAt int
	err := jsonscan.EachRawField(raw, func(k, v []byte, off int) {
		switch string(k) {
		case "type":
			typ = v
		case "message":
			message, messageAt = v, off
		case "content":
			content, contentAt = v, off
		case "replacement":
			replacement, replacementAt = v, off
		}
	})
	if err != nil || len(raw) < min {
		return nil
	}
	t, _ := jsonscan.String(typ)
	var out []Span
	switch t {
	case TypeMessage:
		c, at, role := contentOf(message)
		out = blockSpans(out, c, messageAt+at, role == "toolResult", min)
	case TypeCustomMessage:
		out = blockSpans(out, content, contentAt, false, min)
	case TypeContextEdit:
		c, at, _ := contentOf(replacement)
		out = blockSpans(out, c, replacementAt+at, false, min)
	}
	return out
}

// contentOf returns the "content" value of the JSON object obj, its offset in obj
// and the object's "role" (decoded); nil when obj is not an object or has none.
func contentOf(obj []byte) (content []byte, at int, role string) {
	if len(obj) == 0 || obj[0] != '{' {
		return nil, 0, ""
	}
	var r []byte
	_ = jsonscan.EachRawField(obj, func(k, v []byte, off int) {
		switch string(k) {
		case "content":
			content, at = v, off
		case "role":
			r = v
		}
	})
	role, _ = jsonscan.String(r)
	return content, at, role
}

// blockSpans appends to out the payload spans of the content blocks of arr (a
// content array at offset base of the entry): image data, and when texts is set
// the text of text blocks, of at least min bytes.
func blockSpans(out []Span, arr []byte, base int, texts bool, min int) []Span {
	if len(arr) < min || arr[0] != '[' {
		return out
	}
	_ = jsonscan.EachElement(arr, func(block []byte, off int) {
		if len(block) < min || block[0] != '{' {
			return
		}
		var typ, data, text []byte
		var dataAt, textAt int
		_ = jsonscan.EachRawField(block, func(k, v []byte, at int) {
			switch string(k) {
			case "type":
				typ = v
			case "data":
				data, dataAt = v, at
			case "text":
				text, textAt = v, at
			}
		})
		t, _ := jsonscan.String(typ)
		switch {
		case t == "image":
			out = appendStringSpan(out, data, base+off+dataAt, min)
		case t == "text" && texts:
			out = appendStringSpan(out, text, base+off+textAt, min)
		}
	})
	return out
}

// appendStringSpan appends the span of the contents of the JSON string v (at
// offset at of the entry) when it is a string of at least min bytes.
func appendStringSpan(out []Span, v []byte, at, min int) []Span {
	if len(v) < min+2 || v[0] != '"' {
		return out
	}
	return append(out, Span{Start: at + 1, End: at + len(v) - 1})
}
