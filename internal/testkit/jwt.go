package testkit

import (
	"maps"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// HS256 returns a JSON Web Token signed with the HMAC secret key, for sub,
// expiring after ttl (a negative ttl: expired already), with the extra
// claims, which take the place of sub and exp when they name them.
func HS256(t testing.TB, key []byte, sub string, ttl time.Duration, extra map[string]any) string {
	t.Helper()
	claims := jwt.MapClaims{"sub": sub, "exp": time.Now().Add(ttl).Unix()}
	maps.Copy(claims, extra)
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
