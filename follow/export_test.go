package follow

// SetMaxEntry makes n the longest line f hands over (the store's entry limit
// by default), so that tests skip long lines without writing 64 MiB ones.
func SetMaxEntry(f *Follower, n int64) { f.maxEntry = n }
