package s3bucket

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// listPage is one page of a ListObjectsV2 answer, its keys and prefixes decoded
// (encoding-type=url), its ETags without their quotes and its times cut to the
// millisecond, as minio-go gives them.
type listPage struct {
	contents  []listedObject
	prefixes  []string
	truncated bool
	next      string // NextContinuationToken
}

// listedObject is one Contents element of a listing.
type listedObject struct {
	key     string
	size    int64
	modTime time.Time
	etag    string
}

// listXML is the part of a ListObjectsV2 answer the store reads, for
// encoding/xml. It is the reference parseListPage's scanner must agree with.
type listXML struct {
	XMLName               xml.Name `xml:"ListBucketResult"`
	Contents              []listXMLObject
	CommonPrefixes        []listXMLPrefix
	IsTruncated           bool
	NextContinuationToken string
	EncodingType          string
}

// listXMLObject is one Contents element of listXML.
type listXMLObject struct {
	Key          string
	Size         int64
	LastModified time.Time
	ETag         string
}

// listXMLPrefix is one CommonPrefixes element of listXML.
type listXMLPrefix struct{ Prefix string }

// errNotSimple is scanListPage's answer to XML outside the plain form S3 servers
// write: parseListPage hands such a body to encoding/xml.
var errNotSimple = errors.New("not a plain listing")

// parseListPage reads one ListObjectsV2 answer. minio-go read it with
// encoding/xml, about 20 µs a key, most of a 1,000-key listing's time on the
// client: the answers are machine written, elements without attributes or
// namespaces whose text holds a few entities, so scanListPage reads that form
// directly, and whatever else (a CDATA section, a namespace prefix, an unknown
// entity, a value it does not parse exactly as encoding/xml would) goes to
// encoding/xml, whose answer is the reference (FuzzParseListPage holds the
// scanner to it).
func parseListPage(body []byte) (listPage, error) {
	raw, err := scanListPage(body)
	if errors.Is(err, errNotSimple) {
		raw = listXML{}
		err = xml.Unmarshal(body, &raw)
	}
	if err != nil {
		return listPage{}, fmt.Errorf("read listing: %w", err)
	}
	return raw.page()
}

// page decodes the names of r and checks its paging.
func (r *listXML) page() (listPage, error) {
	p := listPage{truncated: r.IsTruncated, next: r.NextContinuationToken}
	if p.truncated && p.next == "" {
		return listPage{}, errors.New("read listing: truncated without a continuation token")
	}
	name := func(s string) (string, error) {
		if r.EncodingType != "url" {
			return s, nil
		}
		return url.QueryUnescape(s)
	}
	p.contents = make([]listedObject, len(r.Contents))
	for i, c := range r.Contents {
		key, err := name(c.Key)
		if err != nil {
			return listPage{}, fmt.Errorf("read listing: key %q: %w", c.Key, err)
		}
		p.contents[i] = listedObject{key: key, size: c.Size, modTime: c.LastModified.Truncate(time.Millisecond),
			etag: strings.TrimSuffix(strings.TrimPrefix(c.ETag, `"`), `"`)}
	}
	for _, cp := range r.CommonPrefixes {
		prefix, err := name(cp.Prefix)
		if err != nil {
			return listPage{}, fmt.Errorf("read listing: prefix %q: %w", cp.Prefix, err)
		}
		p.prefixes = append(p.prefixes, prefix)
	}
	return p, nil
}

// The elements scanListPage reads, by where they stand.
const (
	elemOther = iota
	elemRoot
	elemContents
	elemPrefixes
	elemKey
	elemSize
	elemModified
	elemETag
	elemPrefix
	elemTruncated
	elemNext
	elemEncoding
)

// openElem is an element scanListPage is inside: what it is, and its name.
type openElem struct {
	e    int
	name []byte
}

// scanListPage reads body's root element as encoding/xml would into listXML,
// or answers errNotSimple for a body it does not read the same way.
func scanListPage(body []byte) (listXML, error) {
	var r listXML
	var stack []openElem // the open elements, the root first
	var text []byte      // the text of the open leaf element
	for i := 0; i < len(body); {
		// An element whose text is read is open (it holds no element).
		inLeaf := len(stack) > 0 && stack[len(stack)-1].e >= elemKey
		if body[i] != '<' {
			j := bytes.IndexByte(body[i:], '<')
			if j < 0 {
				return r, errNotSimple // text after the end, or an unclosed root
			}
			var err error
			switch t := body[i : i+j]; {
			case inLeaf:
				text, err = appendText(text, t)
			case len(stack) == 0 && len(bytes.TrimLeft(t, " \t\r\n")) > 0, !plainText(t):
				err = errNotSimple // text outside the root, or one to check
			}
			if err != nil {
				return r, err
			}
			i += j
			continue
		}
		rest := body[i:]
		switch {
		case bytes.HasPrefix(rest, []byte("<?")):
			j := bytes.Index(rest, []byte("?>"))
			if j < 0 || len(stack) > 0 || !xmlDecl(rest[:j+2]) {
				return r, errNotSimple
			}
			i += j + 2
		case bytes.HasPrefix(rest, []byte("<!--")):
			j := bytes.Index(rest[4:], []byte("--"))
			if inLeaf || j < 0 || !bytes.HasPrefix(rest[4+j:], []byte("-->")) {
				return r, errNotSimple // a comment in a value, or one holding "--"
			}
			i += 4 + j + 3
		case bytes.HasPrefix(rest, []byte("</")):
			name, n, ok := tagName(rest[2:])
			if !ok || len(stack) == 0 || 2+n >= len(rest) || rest[2+n] != '>' {
				return r, errNotSimple
			}
			top := stack[len(stack)-1]
			if !bytes.Equal(name, top.name) {
				return r, errNotSimple // a mismatched end: encoding/xml says why
			}
			if err := r.set(top.e, text); err != nil {
				return r, err
			}
			stack, text = stack[:len(stack)-1], text[:0]
			i += 2 + n + 1
			if len(stack) == 0 {
				return r, nil // encoding/xml reads the first element only
			}
		case bytes.HasPrefix(rest, []byte("<!")):
			return r, errNotSimple // CDATA, DOCTYPE
		default:
			name, n, ok := tagName(rest[1:])
			end := bytes.IndexByte(rest, '>')
			if inLeaf || !ok || end < 0 {
				return r, errNotSimple // an element inside a value, or not a tag
			}
			empty := false
			switch tail := rest[1+n : end]; {
			case len(bytes.TrimLeft(tail, " \t\n")) == 0:
			case bytes.Equal(tail, []byte("/")):
				empty = true
			case len(stack) == 0 && rootAttrs(tail):
			default:
				return r, errNotSimple // attributes: encoding/xml reads them
			}
			e := elemOf(stack, name)
			if e == elemRoot && string(name) != "ListBucketResult" {
				return r, errNotSimple // not a listing: encoding/xml says so
			}
			switch e {
			case elemContents:
				r.Contents = append(r.Contents, listXMLObject{})
			case elemPrefixes:
				r.CommonPrefixes = append(r.CommonPrefixes, listXMLPrefix{})
			}
			i += end + 1
			if empty {
				if err := r.set(e, nil); err != nil {
					return r, err
				}
				if len(stack) == 0 {
					return r, nil
				}
				continue
			}
			stack = append(stack, openElem{e: e, name: name})
		}
	}
	return r, errNotSimple // the root never ended
}

// xmlDecl reports a processing instruction encoding/xml reads for nothing: the
// XML declaration of version 1.0 in UTF-8.
func xmlDecl(pi []byte) bool {
	switch string(pi) {
	case `<?xml version="1.0" encoding="UTF-8"?>`, `<?xml version="1.0" encoding="utf-8"?>`, `<?xml version="1.0"?>`:
		return true
	}
	return false
}

// elemOf names the element called name inside the open elements stack.
func elemOf(stack []openElem, name []byte) int {
	if len(stack) == 0 {
		return elemRoot
	}
	switch stack[len(stack)-1].e {
	case elemRoot:
		switch string(name) {
		case "Contents":
			return elemContents
		case "CommonPrefixes":
			return elemPrefixes
		case "IsTruncated":
			return elemTruncated
		case "NextContinuationToken":
			return elemNext
		case "EncodingType":
			return elemEncoding
		}
	case elemContents:
		switch string(name) {
		case "Key":
			return elemKey
		case "Size":
			return elemSize
		case "LastModified":
			return elemModified
		case "ETag":
			return elemETag
		}
	case elemPrefixes:
		if string(name) == "Prefix" {
			return elemPrefix
		}
	}
	return elemOther
}

// set stores the text of the element e that ends, if e is one whose text is
// read. A value encoding/xml would read otherwise than the scanner (spaces
// around a number, a time in another form) is errNotSimple.
func (r *listXML) set(e int, text []byte) error {
	switch e {
	case elemKey:
		r.Contents[len(r.Contents)-1].Key = string(text)
	case elemETag:
		r.Contents[len(r.Contents)-1].ETag = string(text)
	case elemSize:
		n, ok := plainInt(text)
		if !ok {
			return errNotSimple
		}
		r.Contents[len(r.Contents)-1].Size = n
	case elemModified:
		t, err := time.Parse(time.RFC3339, string(text))
		if err != nil {
			return errNotSimple
		}
		r.Contents[len(r.Contents)-1].LastModified = t
	case elemPrefix:
		r.CommonPrefixes[len(r.CommonPrefixes)-1].Prefix = string(text)
	case elemTruncated:
		switch string(text) {
		case "true":
			r.IsTruncated = true
		case "false":
			r.IsTruncated = false
		default:
			return errNotSimple
		}
	case elemNext:
		r.NextContinuationToken = string(text)
	case elemEncoding:
		r.EncodingType = string(text)
	}
	return nil
}

// plainInt parses a run of at most 18 decimal digits.
func plainInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// tagName reads the element name at the start of b: the bytes up to a space,
// '/' or '>'. A name with a namespace prefix, or that does not start as an XML
// name, is not read (ok false).
func tagName(b []byte) (name []byte, n int, ok bool) {
	for n < len(b) {
		c := b[n]
		switch {
		case c == '>' || c == '/' || c == ' ' || c == '\t' || c == '\n':
			return b[:n], n, n > 0
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_':
		case n > 0 && (c >= '0' && c <= '9' || c == '-' || c == '.'):
		default:
			return nil, 0, false
		}
		n++
	}
	return nil, 0, false
}

// rootAttrs reports the attributes of a root element that the scanner may pass
// over: the S3 namespace declaration, which encoding/xml reads for nothing here.
func rootAttrs(tail []byte) bool {
	t := bytes.TrimSpace(tail)
	return bytes.Equal(t, []byte(`xmlns="http://s3.amazonaws.com/doc/2006-03-01/"`)) && tail[0] == ' '
}

// plainText reports text that holds nothing but ASCII characters other than '&'
// and control characters (spaces between elements): text that encoding/xml
// takes as it is.
func plainText(b []byte) bool {
	for _, c := range b {
		if c >= 0x7f || c < 0x20 && c != '\t' && c != '\n' || c == '&' || c == '>' {
			return false
		}
	}
	return true
}

// appendText appends the text b to dst with its character references decoded.
// Text that encoding/xml would read otherwise (a carriage return it folds, a
// non-ASCII byte it checks, an entity other than the five and numeric ones of
// printable ASCII) is errNotSimple.
func appendText(dst, b []byte) ([]byte, error) {
	for len(b) > 0 {
		j := bytes.IndexByte(b, '&')
		if j < 0 {
			j = len(b)
		}
		if !plainText(b[:j]) {
			return dst, errNotSimple
		}
		dst = append(dst, b[:j]...)
		if b = b[j:]; len(b) == 0 {
			break
		}
		semi := bytes.IndexByte(b, ';')
		if semi < 0 || semi > 8 {
			return dst, errNotSimple
		}
		c, ok := entity(b[1:semi])
		if !ok {
			return dst, errNotSimple
		}
		dst, b = append(dst, c), b[semi+1:]
	}
	return dst, nil
}

// entity decodes the name of a character reference (between '&' and ';') that
// stands for a printable ASCII character.
func entity(name []byte) (byte, bool) {
	switch string(name) {
	case "lt":
		return '<', true
	case "gt":
		return '>', true
	case "amp":
		return '&', true
	case "apos":
		return '\'', true
	case "quot":
		return '"', true
	}
	if len(name) < 2 || name[0] != '#' {
		return 0, false
	}
	base, digits := 10, name[1:]
	if name[1] == 'x' {
		base, digits = 16, name[2:]
	}
	n, err := strconv.ParseUint(string(digits), base, 8)
	if err != nil || n < 0x20 || n > 0x7e {
		return 0, false
	}
	return byte(n), true
}
