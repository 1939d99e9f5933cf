package transcript

import (
	"hash/maphash"
	"math/bits"
)

// idTable finds the item of an id in a LeanResult (or the entry of an id in the
// merge of ReadAll): an open-addressing hash table of item numbers, the ids
// themselves read from the items. It takes 4 bytes a
// slot, at most two slots an item, where a map[string]int32 of the same ids
// takes some 30 bytes an id (its own copy of each string header, and room to
// grow): for a session of a million entries the difference is over 20 MB, held
// as long as the result.
type idTable struct {
	seed  maphash.Seed
	slots []int32 // item number + 1; 0 is an empty slot
	mask  uint64
}

// newIDTable returns a table for up to n ids.
func newIDTable(n int) idTable {
	size := uint64(1) << bits.Len64(uint64(2*n)|15) // load factor at most one half
	return idTable{seed: maphash.MakeSeed(), slots: make([]int32, size), mask: size - 1}
}

// find returns the item of id (idOf gives the id of an item) and true, or the
// slot where id would go and false.
func (t *idTable) find(id string, idOf func(int32) string) (item int32, slot uint64, ok bool) {
	for h := maphash.String(t.seed, id) & t.mask; ; h = (h + 1) & t.mask {
		v := t.slots[h]
		if v == 0 {
			return -1, h, false
		}
		if idOf(v-1) == id {
			return v - 1, h, true
		}
	}
}

// set puts item at slot (one find returned for an id not in the table).
func (t *idTable) set(slot uint64, item int32) { t.slots[slot] = item + 1 }

// reset empties the table, keeping its memory.
func (t *idTable) reset() { clear(t.slots) }
