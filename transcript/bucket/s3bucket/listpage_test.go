package s3bucket

import (
	"encoding/xml"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// minioPage is a listing page as MinIO writes it, with n keys after from.
func minioPage(n int, truncated bool) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" +
		`<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>bench</Name><Prefix>t/a/s/</Prefix><KeyCount>` +
		fmt.Sprint(n) + `</KeyCount><MaxKeys>1000</MaxKeys><Delimiter></Delimiter><IsTruncated>` + fmt.Sprint(truncated) + `</IsTruncated>`)
	if truncated {
		b.WriteString(`<NextContinuationToken>MTIzNDU2Nzg5MA==</NextContinuationToken>`)
	}
	for i := range n {
		fmt.Fprintf(&b, `<Contents><Key>t/a/s/L0/20261206T021321.%06dZ-bench0000000001-%08d-0123456789abcdef</Key><LastModified>2026-12-06T02:13:21.%03dZ</LastModified><ETag>&#34;0123456789abcdef0123456789abcdef&#34;</ETag><Size>%d</Size><Owner><ID>02d6176db174dc93cb1b899f7c6078f0</ID><DisplayName>minio</DisplayName></Owner><StorageClass>STANDARD</StorageClass></Contents>`,
			i, i, i%1000, 1000+i)
	}
	b.WriteString(`<EncodingType>url</EncodingType></ListBucketResult>`)
	return b.String()
}

// reference reads body with encoding/xml, as parseListPage does when its scanner
// gives up.
func reference(body []byte) (listPage, error) {
	var r listXML
	if err := xml.Unmarshal(body, &r); err != nil {
		return listPage{}, err
	}
	return r.page()
}

func TestParseListPage(t *testing.T) {
	modTime := time.Date(2026, 12, 6, 2, 13, 21, 0, time.UTC)
	tests := []struct {
		name   string
		body   string
		simple bool // the scanner reads it itself
		want   listPage
		err    string
	}{
		{name: "MinIO's page", body: minioPage(2, true), simple: true, want: listPage{
			contents: []listedObject{
				{key: "t/a/s/L0/20261206T021321.000000Z-bench0000000001-00000000-0123456789abcdef", size: 1000, modTime: modTime, etag: "0123456789abcdef0123456789abcdef"},
				{key: "t/a/s/L0/20261206T021321.000001Z-bench0000000001-00000001-0123456789abcdef", size: 1001, modTime: modTime.Add(time.Millisecond), etag: "0123456789abcdef0123456789abcdef"},
			},
			truncated: true, next: "MTIzNDU2Nzg5MA==",
		}},
		{name: "an empty listing", simple: true, body: `<ListBucketResult><IsTruncated>false</IsTruncated><KeyCount>0</KeyCount></ListBucketResult>`,
			want: listPage{contents: []listedObject{}}},
		{name: "keys escaped twice", simple: true,
			body: `<ListBucketResult><EncodingType>url</EncodingType><Contents><Key>a%2Bb+c%26d&amp;&lt;&gt;&apos;&quot;&#x41;&#65;</Key><Size>0</Size><LastModified>2026-12-06T02:13:21.000123Z</LastModified><ETag>&quot;e&quot;</ETag></Contents></ListBucketResult>`,
			want: listPage{contents: []listedObject{{key: `a+b c&d&<>'"AA`, modTime: modTime, etag: "e"}}}},
		{name: "names not escaped", simple: true,
			body: `<ListBucketResult><Contents><Key>a+b%2F</Key><Size>7</Size><LastModified>2026-12-06T02:13:21Z</LastModified></Contents></ListBucketResult>`,
			want: listPage{contents: []listedObject{{key: "a+b%2F", size: 7, modTime: modTime}}}},
		{name: "common prefixes", simple: true,
			body: `<ListBucketResult><EncodingType>url</EncodingType><CommonPrefixes><Prefix>t/a%20b/</Prefix></CommonPrefixes><CommonPrefixes><Prefix>t/c/</Prefix></CommonPrefixes><IsTruncated>false</IsTruncated></ListBucketResult>`,
			want: listPage{contents: []listedObject{}, prefixes: []string{"t/a b/", "t/c/"}}},
		{name: "empty elements and comments", simple: true,
			body: "<ListBucketResult>\n\t<!-- a comment -->\n\t<Contents><Key/><Size>1</Size><LastModified>2026-12-06T02:13:21Z</LastModified><ETag/></Contents><Contents/><Other/></ListBucketResult>",
			want: listPage{contents: []listedObject{{size: 1, modTime: modTime}, {modTime: time.Time{}}}}},
		{name: "the last of two values", simple: true,
			body: `<ListBucketResult><IsTruncated>true</IsTruncated><IsTruncated>false</IsTruncated><Contents><Key>a</Key><Key>b</Key><LastModified>2026-12-06T02:13:21Z</LastModified></Contents></ListBucketResult>`,
			want: listPage{contents: []listedObject{{key: "b", modTime: modTime}}}},
		{name: "elements of the same name elsewhere", simple: true,
			body: `<ListBucketResult><Owner><Key>x</Key><Contents><Key>y</Key></Contents></Owner><Contents><Other><Key>z</Key></Other><Key>k</Key><LastModified>2026-12-06T02:13:21Z</LastModified></Contents></ListBucketResult>`,
			want: listPage{contents: []listedObject{{key: "k", modTime: modTime}}}},
		{name: "what follows the root is not read", simple: true,
			body: `<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult><ListBucketResult><Contents><Key>k</Key></Contents></ListBucketResult>garbage`,
			want: listPage{contents: []listedObject{}}},
		{name: "CDATA", body: `<ListBucketResult><Contents><Key><![CDATA[a<b]]></Key><LastModified>2026-12-06T02:13:21Z</LastModified></Contents></ListBucketResult>`,
			want: listPage{contents: []listedObject{{key: "a<b", modTime: modTime}}}},
		{name: "a size with spaces", body: `<ListBucketResult><Contents><Key>k</Key><Size> 12 </Size><LastModified>2026-12-06T02:13:21Z</LastModified></Contents></ListBucketResult>`,
			want: listPage{contents: []listedObject{{key: "k", size: 12, modTime: modTime}}}},
		{name: "a namespace prefix", body: `<s:ListBucketResult xmlns:s="x"><s:Contents><s:Key>k</s:Key><s:LastModified>2026-12-06T02:13:21Z</s:LastModified></s:Contents></s:ListBucketResult>`,
			want: listPage{contents: []listedObject{{key: "k", modTime: modTime}}}},
		{name: "a carriage return", body: "<ListBucketResult><Contents><Key>a\r\nb</Key><LastModified>2026-12-06T02:13:21Z</LastModified></Contents></ListBucketResult>",
			want: listPage{contents: []listedObject{{key: "a\nb", modTime: modTime}}}},
		{name: "a non-ASCII key", body: `<ListBucketResult><Contents><Key>é</Key><LastModified>2026-12-06T02:13:21Z</LastModified></Contents></ListBucketResult>`,
			want: listPage{contents: []listedObject{{key: "é", modTime: modTime}}}},
		{name: "attributes", body: `<ListBucketResult><Contents a="1>2"><Key>k</Key><LastModified>2026-12-06T02:13:21Z</LastModified></Contents></ListBucketResult>`,
			want: listPage{contents: []listedObject{{key: "k", modTime: modTime}}}},
		{name: "truncated without a token", simple: true, body: `<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>`, err: "without a continuation token"},
		{name: "a key that does not unescape", simple: true, body: `<ListBucketResult><EncodingType>url</EncodingType><Contents><Key>a%zz</Key><LastModified>2026-12-06T02:13:21Z</LastModified></Contents></ListBucketResult>`, err: "invalid URL escape"},
		{name: "an unknown entity", body: `<ListBucketResult><Contents><Key>a&nbsp;</Key></Contents></ListBucketResult>`, err: "read listing"},
		{name: "a mismatched end", body: `<ListBucketResult><Contents><Key>a</Size></Contents></ListBucketResult>`, err: "read listing"},
		{name: "an unclosed root", body: `<ListBucketResult><Contents><Key>a</Key></Contents>`, err: "read listing"},
		{name: "a bad size", body: `<ListBucketResult><Contents><Size>-x</Size></Contents></ListBucketResult>`, err: "read listing"},
		{name: "a bad time", body: `<ListBucketResult><Contents><LastModified>yesterday</LastModified></Contents></ListBucketResult>`, err: "read listing"},
		{name: "another document", body: `<html><body>Bad gateway</body></html>`, err: "expected element type <ListBucketResult>"},
		{name: "not XML", body: `{"Contents":[]}`, err: "read listing"},
		{name: "empty", body: ``, err: "read listing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, serr := scanListPage([]byte(tt.body))
			if tt.simple {
				require.NoError(t, serr, "the scanner reads it")
			} else {
				require.ErrorIs(t, serr, errNotSimple, "the scanner hands it to encoding/xml")
			}
			got, err := parseListPage([]byte(tt.body))
			ref, rerr := reference([]byte(tt.body))
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				require.Error(t, rerr, "encoding/xml refuses it too")
				return
			}
			require.NoError(t, err)
			require.NoError(t, rerr)
			require.Equal(t, tt.want, got)
			require.Equal(t, ref, got, "as encoding/xml reads it")
		})
	}
}

// FuzzParseListPage holds the scanner to encoding/xml: whatever it reads itself,
// encoding/xml reads the same, and no body makes parseListPage panic.
func FuzzParseListPage(f *testing.F) {
	f.Add([]byte(minioPage(3, true)))
	f.Add([]byte(`<ListBucketResult><EncodingType>url</EncodingType><CommonPrefixes><Prefix>t/a%20b/</Prefix></CommonPrefixes></ListBucketResult>`))
	f.Add([]byte(`<ListBucketResult><Contents><Key>a&amp;&#x41;</Key><Size>1</Size><LastModified>2026-12-06T02:13:21Z</LastModified><ETag/></Contents><!-- c --></ListBucketResult>`))
	f.Add([]byte(`<?xml version="1.0"?><ListBucketResult><Contents/><IsTruncated>true</IsTruncated><NextContinuationToken>x</NextContinuationToken></ListBucketResult>`))
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := scanListPage(body)
		_, _ = parseListPage(body)
		if err != nil {
			require.ErrorIs(t, err, errNotSimple)
			return
		}
		var want listXML
		require.NoError(t, xml.Unmarshal(body, &want), "the scanner read what encoding/xml refuses")
		require.Equal(t, normalize(want), normalize(got))
	})
}

// normalize gives r's times as text, which compares their instants and zones
// whatever *time.Location values stand for them.
func normalize(r listXML) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%t %q %q\n", r.IsTruncated, r.NextContinuationToken, r.EncodingType)
	for _, c := range r.Contents {
		fmt.Fprintf(&b, "%q %d %s %q\n", c.Key, c.Size, c.LastModified.Format(time.RFC3339Nano), c.ETag)
	}
	for _, p := range r.CommonPrefixes {
		fmt.Fprintf(&b, "%q\n", p.Prefix)
	}
	return b.String()
}

// BenchmarkParseListPage reads a page of 1,000 keys as MinIO writes it, with
// the scanner and with encoding/xml (what minio-go's listing did).
func BenchmarkParseListPage(b *testing.B) {
	body := []byte(minioPage(1000, true))
	for _, bc := range []struct {
		name  string
		parse func([]byte) (listPage, error)
	}{{"scan", parseListPage}, {"encoding-xml", reference}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				p, err := bc.parse(body)
				if err != nil || len(p.contents) != 1000 {
					b.Fatal(err, len(p.contents))
				}
			}
		})
	}
}

// TestListBackoff: the wait before a retry grows to the cap and stays within it
// for any number of attempts.
func TestListBackoff(t *testing.T) {
	for attempt := range 200 {
		for range 20 {
			d := listBackoff(attempt)
			top := min(listRetryCap, listRetryUnit<<min(attempt, 3))
			require.Greater(t, d, top/2-1, "attempt %d", attempt)
			require.LessOrEqual(t, d, top, "attempt %d", attempt)
		}
	}
}
