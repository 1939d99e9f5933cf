package bucket

import "io"

// CountingReader counts the bytes read through it: how a wrapper of a Bucket
// measures the payload it passes on to the inner bucket's Put, PutIf or Replace.
type CountingReader struct {
	R io.Reader // the source
	N int64     // the bytes read so far
}

// Read implements io.Reader.
func (c *CountingReader) Read(p []byte) (int, error) {
	n, err := c.R.Read(p)
	c.N += int64(n)
	return n, err
}
