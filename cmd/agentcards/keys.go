package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/agentcards/agentcards/authz/token"
)

// signingKeyFileName is where a generated service signing key lives inside the data directory.
const signingKeyFileName = "signing-key.pem"

// serviceKeys loads the configured signing keys (oldest first; the last one signs) or, when none
// is configured, an ES256 key generated into the data directory on first use (mode 0600).
func serviceKeys(cfg Config) (*token.ServiceKeys, error) {
	files := cfg.Keys.SigningKeyFiles
	if len(files) == 0 {
		path := filepath.Join(cfg.DataDir, signingKeyFileName)
		if err := createSigningKey(path); err != nil {
			return nil, err
		}
		files = []string{path}
	}
	var keys []token.ServiceKey
	for _, f := range files {
		signer, err := readPrivateKey(f)
		if err != nil {
			return nil, fmt.Errorf("keys.signingKeyFiles: %w", err)
		}
		k, err := token.NewServiceKey(signer)
		if err != nil {
			return nil, fmt.Errorf("keys.signingKeyFiles: %s: %w", f, err)
		}
		keys = append(keys, k)
	}
	return token.NewServiceKeys(keys...)
}

// createSigningKey writes a new P-256 key to path unless a file is already there.
func createSigningKey(path string) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil // another process made it first: use theirs
	}
	if err != nil {
		return err
	}
	if err := pem.Encode(f, &pem.Block{Type: "PRIVATE KEY", Bytes: der}); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
