package server

import (
	"crypto"
	"crypto/ed25519"
	"crypto/rsa"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/transcriptstore/transcript/repository"
)

// ErrUnauthorized is wrapped by every authentication failure: a missing, malformed,
// forged or expired credential, or one whose owner is invalid. The server answers
// 401 without saying which.
var ErrUnauthorized = errors.New("unauthorized")

// Authenticator derives the owner of a request from a verified credential. It
// never reads the request body.
type Authenticator interface {
	Authenticate(r *http.Request) (repository.Owner, error)
}

// Claim names used by JWTAuth and MintToken.
const (
	// ClaimTenant holds the owner's tenant.
	ClaimTenant = "tenant"
	// ClaimUser holds the owner's user; the standard "sub" claim.
	ClaimUser = "sub"
)

// JWTAuth verifies bearer JSON Web Tokens. A token must carry an expiry ("exp"),
// be signed with one of the configured keys, and name the owner in the "tenant"
// and "sub" claims.
type JWTAuth struct {
	// HMACKey verifies HS256 tokens when set (at least 32 bytes).
	HMACKey []byte
	// PublicKey verifies RS256 (an *rsa.PublicKey) or EdDSA (an ed25519.PublicKey)
	// tokens when set.
	PublicKey crypto.PublicKey
	// Issuer and Audience, when set, must match the "iss" and "aud" claims.
	Issuer, Audience string
	// Leeway is the clock skew tolerated on "exp" and "nbf".
	Leeway time.Duration
}

// MinHMACKeyLen is the shortest HS256 key accepted, in bytes.
const MinHMACKeyLen = 32

// Validate checks that at least one usable key is configured.
func (a *JWTAuth) Validate() error {
	if a.HMACKey == nil && a.PublicKey == nil {
		return errors.New("jwt: no verification key configured")
	}
	if a.HMACKey != nil && len(a.HMACKey) < MinHMACKeyLen {
		return fmt.Errorf("jwt: HS256 key is %d bytes, under %d", len(a.HMACKey), MinHMACKeyLen)
	}
	switch a.PublicKey.(type) {
	case nil, *rsa.PublicKey, ed25519.PublicKey:
	default:
		return fmt.Errorf("jwt: unsupported public key type %T", a.PublicKey)
	}
	return nil
}

func (a *JWTAuth) methods() []string {
	var m []string
	if a.HMACKey != nil {
		m = append(m, jwt.SigningMethodHS256.Alg())
	}
	switch a.PublicKey.(type) {
	case *rsa.PublicKey:
		m = append(m, jwt.SigningMethodRS256.Alg())
	case ed25519.PublicKey:
		m = append(m, jwt.SigningMethodEdDSA.Alg())
	}
	return m
}

// key picks the verification key by the token's algorithm; WithValidMethods has
// already refused any algorithm without a configured key. A token whose header
// lists critical extensions ("crit") is refused: the server understands none,
// and RFC 7515 (4.1.11) says such a token must then be rejected.
func (a *JWTAuth) key(t *jwt.Token) (any, error) {
	if _, ok := t.Header["crit"]; ok {
		return nil, errors.New(`the token's header names critical extensions ("crit"), which this server does not understand`)
	}
	switch t.Method.(type) {
	case *jwt.SigningMethodHMAC:
		return a.HMACKey, nil
	default:
		return a.PublicKey, nil
	}
}

// Authenticate verifies the request's "Authorization: Bearer" token.
func (a *JWTAuth) Authenticate(r *http.Request) (repository.Owner, error) {
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return repository.Owner{}, fmt.Errorf("%w: no bearer token", ErrUnauthorized)
	}
	opts := []jwt.ParserOption{
		jwt.WithValidMethods(a.methods()),
		jwt.WithExpirationRequired(),
		jwt.WithLeeway(a.Leeway),
	}
	if a.Issuer != "" {
		opts = append(opts, jwt.WithIssuer(a.Issuer))
	}
	if a.Audience != "" {
		opts = append(opts, jwt.WithAudience(a.Audience))
	}
	claims := jwt.MapClaims{}
	if _, err := jwt.ParseWithClaims(strings.TrimSpace(tok), claims, a.key, opts...); err != nil {
		return repository.Owner{}, fmt.Errorf("%w: %w", ErrUnauthorized, err)
	}
	tenant, _ := claims[ClaimTenant].(string)
	user, _ := claims[ClaimUser].(string)
	o := repository.Owner{Tenant: tenant, User: user}
	if err := o.Validate(); err != nil {
		return repository.Owner{}, fmt.Errorf("%w: %w", ErrUnauthorized, err)
	}
	return o, nil
}

// MintToken returns an HS256 token for tenant and user, valid for ttl from now.
// It is meant for tests and local use; production tokens come from an identity
// provider.
func MintToken(key []byte, tenant, user string, now time.Time, ttl time.Duration) (string, error) {
	if len(key) < MinHMACKeyLen {
		return "", fmt.Errorf("jwt: HS256 key is %d bytes, under %d", len(key), MinHMACKeyLen)
	}
	if err := (repository.Owner{Tenant: tenant, User: user}).Validate(); err != nil {
		return "", err
	}
	claims := jwt.MapClaims{
		ClaimTenant: tenant,
		ClaimUser:   user,
		"iat":       now.Unix(),
		"exp":       now.Add(ttl).Unix(),
	}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(key)
}

// HeaderAuth takes the owner from request headers set by an authenticating proxy
// in front of the server. Use it only when every request passes that proxy: any
// client that reaches the server directly can claim any owner.
type HeaderAuth struct {
	// TenantHeader and UserHeader name the headers (defaults X-Transcript-Tenant
	// and X-Transcript-User).
	TenantHeader, UserHeader string
}

// Authenticate reads the owner from the configured headers. A header given
// more than once is refused: a proxy that adds its header instead of replacing
// the client's would otherwise let the client's own value, sent first, win.
func (h HeaderAuth) Authenticate(r *http.Request) (repository.Owner, error) {
	th, uh := h.TenantHeader, h.UserHeader
	if th == "" {
		th = "X-Transcript-Tenant"
	}
	if uh == "" {
		uh = "X-Transcript-User"
	}
	for _, name := range []string{th, uh} {
		if n := len(r.Header.Values(name)); n > 1 {
			return repository.Owner{}, fmt.Errorf("%w: header %s given %d times", ErrUnauthorized, name, n)
		}
	}
	o := repository.Owner{Tenant: r.Header.Get(th), User: r.Header.Get(uh)}
	if err := o.Validate(); err != nil {
		return repository.Owner{}, fmt.Errorf("%w: %w", ErrUnauthorized, err)
	}
	return o, nil
}
