package repository

import (
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// NewViewBucket exposes the read view's bucket wrapper to the black-box tests.
func NewViewBucket(inner bucket.Bucket, prefix string, keep func(transcript.SegmentInfo) bool) bucket.Bucket {
	return viewBucket{inner: inner, prefix: prefix, keep: keep}
}
