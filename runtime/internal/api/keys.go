package api

import (
	"io"
	"net/http"

	"github.com/bananas-go/bananas/runtime/admin"
)

// rotateKeys answers POST /api/v1/keys/rotate with the rotation's counts.
func (s *server) rotateKeys(w http.ResponseWriter, r *http.Request) error {
	if n, _ := io.ReadFull(r.Body, make([]byte, 1)); n > 0 {
		return BadRequest("body", "POST /api/v1/keys/rotate takes no body: it rotates to the newest of the server's BANANAS_KEYS")
	}
	ka, ok := s.a.(admin.KeysAdmin)
	if !ok {
		return BadRequest("keys", "this program cannot rotate keys")
	}
	n, err := ka.RotateKeys(r.Context())
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, n)
}
