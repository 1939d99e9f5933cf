package bucket

import (
	"fmt"
	"strings"
)

// MaxKeyLen is the longest key any backend accepts, in bytes (S3's limit).
const MaxKeyLen = 1024

// ValidateKey checks that key is a relative, slash-separated path that every backend
// can store under the same name: non-empty, at most MaxKeyLen bytes, no leading or
// trailing "/", no empty, "." or ".." elements, no control characters and no "\".
// It returns an error wrapping ErrInvalidKey.
func ValidateKey(key string) error {
	if key == "" {
		return fmt.Errorf("%w: empty", ErrInvalidKey)
	}
	if len(key) > MaxKeyLen {
		return fmt.Errorf("%w: %d bytes is over %d", ErrInvalidKey, len(key), MaxKeyLen)
	}
	for _, r := range key {
		if r < 0x20 || r == 0x7f || r == '\\' {
			return fmt.Errorf("%w: %q has a control character or backslash", ErrInvalidKey, key)
		}
	}
	for _, el := range strings.Split(key, "/") {
		switch el {
		case "", ".", "..":
			return fmt.Errorf("%w: %q has an empty, \".\" or \"..\" element", ErrInvalidKey, key)
		}
	}
	return nil
}

// ValidatePrefix checks a listing prefix: empty, or a valid key optionally ending in "/".
func ValidatePrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	return ValidateKey(strings.TrimSuffix(prefix, "/"))
}
