package main

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/transcriptstore/transcript/internal/rusage"
)

// Machine describes where a run was made.
type Machine struct {
	CPU       string `json:"cpu"`
	Cores     int    `json:"cores"`
	MemKiB    int64  `json:"memKiB"`
	GoVersion string `json:"goVersion"`
	OS        string `json:"os"`
}

// machine reads the CPU model and RAM from /proc (empty where unavailable).
func machine() Machine {
	m := Machine{Cores: runtime.NumCPU(), GoVersion: runtime.Version(), OS: runtime.GOOS + "/" + runtime.GOARCH}
	m.CPU = procField("/proc/cpuinfo", "model name")
	if v := procField("/proc/meminfo", "MemTotal"); v != "" {
		m.MemKiB, _ = strconv.ParseInt(strings.TrimSuffix(v, " kB"), 10, 64)
	}
	if m.CPU == "" {
		m.CPU = "unknown CPU"
	}
	return m
}

// procField returns the value of the first "name: value" line of a /proc file.
func procField(path, name string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == name {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// peakRSSKiB returns the process's peak resident set size in KiB, 0 where it
// cannot be read.
func peakRSSKiB() int64 {
	peak, err := rusage.SelfPeakRSS()
	if err != nil {
		return 0
	}
	return peak >> 10
}
