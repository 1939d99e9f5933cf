module github.com/transcriptstore/transcript

go 1.26.0
