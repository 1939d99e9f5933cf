//go:build darwin || ios

package rusage

// maxRSSUnit is the unit of ru_maxrss in bytes: macOS reports bytes.
const maxRSSUnit = 1
