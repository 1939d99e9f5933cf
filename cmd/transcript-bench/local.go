package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/transcriptstore/transcript/segment"
	"github.com/transcriptstore/transcript/sessiontree"
)

// loop calls fn once to warm up, then until d has passed (at least once), and returns calls per second.
func loop(ctx context.Context, d time.Duration, fn func() error) (float64, error) {
	if err := fn(); err != nil { // warm up: lazily allocated state
		return 0, err
	}
	start := time.Now()
	n := 0
	for {
		if err := fn(); err != nil {
			return 0, err
		}
		n++
		if el := time.Since(start); el >= d || ctx.Err() != nil {
			return float64(n) / el.Seconds(), ctx.Err()
		}
	}
}

// runCodec is item 1: segment Encode and Decode (with all their verification) in MB/s
// of uncompressed JSONL, against zstd EncodeAll and DecodeAll of the same bytes at
// the same level: the limit of the format.
func runCodec(ctx context.Context, e *env) (ItemResult, error) {
	var res ItemResult
	enc, err := segment.NewEncoder()
	if err != nil {
		return res, err
	}
	defer enc.Close()
	dec, err := segment.NewDecoder()
	if err != nil {
		return res, err
	}
	defer dec.Close()
	zenc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault))
	if err != nil {
		return res, err
	}
	defer zenc.Close()
	zdec, err := zstd.NewReader(nil)
	if err != nil {
		return res, err
	}
	defer zdec.Close()
	d := time.Duration(e.cfg.Sizes.CodecSeconds * float64(time.Second))
	for _, turns := range e.cfg.Sizes.CodecTurns {
		entries := flatten(session("codec", uint64(turns), turns))
		raw := make([]byte, 0, jsonlSize(entries))
		for _, en := range entries {
			raw = append(append(raw, en...), '\n')
		}
		meta := segment.Meta{WriterID: "bench", Seq: 1, FirstID: "first", LastID: "last"}
		data, m, err := enc.Encode(meta, entries)
		if err != nil {
			return res, err
		}
		// Decoding the raw zstd payload needs the bytes after the metadata frame.
		_, n, err := dec.ReadMeta(data)
		if err != nil {
			return res, err
		}
		payload := data[n:]
		if got, err := zdec.DecodeAll(payload, nil); err != nil || !bytes.Equal(got, raw) {
			return res, fmt.Errorf("segment payload is not the zstd of the JSONL (err %v)", err)
		}
		size := float64(len(raw))
		encS, err := loop(ctx, d, func() error { _, _, err := enc.Encode(meta, entries); return err })
		if err != nil {
			return res, err
		}
		encZ, err := loop(ctx, d, func() error { _ = zenc.EncodeAll(raw, nil); return nil })
		if err != nil {
			return res, err
		}
		decS, err := loop(ctx, d, func() error { _, err := dec.Decode(data); return err })
		if err != nil {
			return res, err
		}
		decZ, err := loop(ctx, d, func() error { _, err := zdec.DecodeAll(payload, nil); return err })
		if err != nil {
			return res, err
		}
		note := fmt.Sprintf("%d entries, %.1f KiB JSONL → %.1f KiB (%.1f×)", len(entries), size/1024,
			float64(len(data))/1024, size/float64(len(data)))
		res.Rows = append(res.Rows,
			row(1, fmt.Sprintf("segment Encode, %d-turn segment", turns), "MB/s", encS*size/mb, "zstd EncodeAll", encZ*size/mb, true, note),
			row(1, fmt.Sprintf("segment Decode, %d-turn segment", turns), "MB/s", decS*size/mb, "zstd DecodeAll", decZ*size/mb, true, note))
		e.logf("%d turns: encode %.0f vs %.0f MB/s, decode %.0f vs %.0f MB/s (meta %d B, %d raw)", turns,
			encS*size/mb, encZ*size/mb, decS*size/mb, decZ*size/mb, n, m.RawLen)
	}
	return res, nil
}

// runFlush is item 2: a SessionTree appending each turn (three entries) and flushing
// it to its two local files with fsync, against Pi's way of writing a session: open,
// append one line, fsync, close, per entry. Both write the same entry bytes.
func runFlush(ctx context.Context, e *env) (ItemResult, error) {
	var res ItemResult
	turns := e.cfg.Sizes.FlushTurns
	batches := session("flush", 2, turns)
	batches[0] = batches[0][1:] // the tree writes its own header
	entries := flatten(batches)
	size := float64(jsonlSize(entries))

	tree, err := sessiontree.New(sessiontree.Config{Root: filepath.Join(e.tmp, "tree")}, sessiontree.Identity{}, "bench", "flush", sessiontree.HeaderOptions{})
	if err != nil {
		return res, err
	}
	treeT, err := timeIt(func() error {
		for _, b := range batches {
			for _, en := range b {
				if _, err := tree.AppendRaw(en); err != nil {
					return err
				}
			}
			if err := tree.Flush(ctx); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return res, err
	}
	plain := filepath.Join(e.tmp, "plain.jsonl")
	plainT, err := timeIt(func() error {
		for _, en := range entries {
			if err := appendLine(plain, en); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return res, err
	}
	n := float64(len(entries))
	note := fmt.Sprintf("%d turns of 3 entries, %.1f MiB; tree: 1 flush per turn (2 files, fsync each); plain: 1 fsync per entry", turns, size/(1<<20))
	res.Rows = append(res.Rows,
		row(2, "Append + Flush (one flush per turn), entries/s", "entries/s", n/treeT.Seconds(), "open+append+fsync+close per entry", n/plainT.Seconds(), true, note),
		row(2, "Append + Flush, mean time per turn", "ms", treeT.Seconds()*1000/float64(turns), "3 plain appends", plainT.Seconds()*1000/float64(turns), false, ""))
	return res, nil
}

// appendLine is Pi's per-entry write: open for append, write, fsync, close.
func appendLine(path string, line []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(append(line[:len(line):len(line)], '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
