// Package reliability holds the reliability and security suite of the store:
// black-box tests over the exported APIs and the real binaries that
// kill writers, break the network, lose a drive, corrupt segments, feed hostile
// input, probe tenant isolation and look for leaked secrets. RELIABILITY.md at the
// repository root lists what each test tries and what it found lost (nothing).
//
// The package has no non-test code; run it with
//
//	go test -race -count=1 ./internal/reliability/
//
// with the MinIO environment of deploy/minio/minio.sh set (CI=true makes every
// test that needs MinIO fail instead of skip).
package reliability
