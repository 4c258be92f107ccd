package main

import (
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentcards/agentcards/authz/token"
)

// secretFileName is where a generated HS256 secret lives inside the data directory.
const secretFileName = "jwt-secret"

// tokenConfig builds the JWT settings, reading keys from files. For HS256 without a configured
// secret it reads the one in the data directory; with create (serve) it generates it there on
// first use (mode 0600), and without (the token command) it fails rather than sign with a secret
// no server knows. The bool says the secret is the data directory's.
func tokenConfig(cfg Config, create bool) (token.Config, bool, error) {
	tc := token.Config{
		Algorithm:      cfg.Auth.Algorithm,
		Issuer:         cfg.Auth.Issuer,
		Audience:       cfg.Auth.Audience,
		Leeway:         cfg.Auth.Leeway,
		PlatformAdmins: cfg.Auth.PlatformAdmins,
	}
	generated := false
	if tc.Algorithm == "HS256" {
		secret := cfg.Auth.Secret
		if secret == "" && cfg.Auth.SecretFile != "" {
			b, err := os.ReadFile(cfg.Auth.SecretFile)
			if err != nil {
				return tc, false, fmt.Errorf("auth.secretFile: %w", err)
			}
			secret = strings.TrimRight(string(b), "\r\n")
		}
		if secret == "" {
			path := filepath.Join(cfg.DataDir, secretFileName)
			read := loadOrCreateSecret
			if !create {
				read = readSecret
			}
			s, err := read(path)
			if !create && errors.Is(err, fs.ErrNotExist) {
				return tc, false, noSecretError(path)
			}
			if err != nil {
				return tc, false, err
			}
			secret, generated = s, true
		}
		tc.Secret = []byte(secret)
		return tc, generated, nil
	}
	for _, f := range cfg.Auth.PublicKeyFiles {
		k, err := readPublicKey(f)
		if err != nil {
			return tc, false, err
		}
		tc.PublicKeys = append(tc.PublicKeys, k)
	}
	if cfg.Auth.PrivateKeyFile != "" {
		k, err := readPrivateKey(cfg.Auth.PrivateKeyFile)
		if err != nil {
			return tc, false, err
		}
		tc.PrivateKey = k
	}
	return tc, false, nil
}

// noSecretError explains, to someone minting a token, that there is no HS256 secret to sign with.
func noSecretError(path string) error {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	return fmt.Errorf("no JWT secret to sign with: auth.secret and auth.secretFile are empty and %s does not exist "+
		"(serve generates it on its first start). Run this command in the directory the server runs in, "+
		"or point dataDir (AGENTCARDS_DATA_DIR) at the server's data directory, "+
		"or set auth.secret or auth.secretFile (AGENTCARDS_AUTH_SECRET, AGENTCARDS_AUTH_SECRET_FILE) to the server's secret", path)
}

// readSecret returns the secret in path; an error wrapping fs.ErrNotExist when there is none.
func readSecret(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	s := strings.TrimSpace(string(b))
	if len(s) < 32 {
		return "", fmt.Errorf("%s: the secret is shorter than 32 characters", path)
	}
	return s, nil
}

// loadOrCreateSecret returns the secret in path, creating it with 32 random bytes if absent.
// O_EXCL makes two processes starting at once agree on one secret.
func loadOrCreateSecret(path string) (string, error) {
	if s, err := readSecret(path); !errors.Is(err, fs.ErrNotExist) {
		return s, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", err
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", err
	}
	secret := hex.EncodeToString(raw[:])
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return loadOrCreateSecret(path)
	}
	if err != nil {
		return "", err
	}
	if _, err := f.WriteString(secret + "\n"); err != nil {
		f.Close()
		return "", err
	}
	return secret, f.Close()
}

func readPEM(path string) (*pem.Block, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, fmt.Errorf("%s: no PEM block", path)
	}
	return block, nil
}

func readPublicKey(path string) (crypto.PublicKey, error) {
	block, err := readPEM(path)
	if err != nil {
		return nil, err
	}
	if k, err := x509.ParsePKIXPublicKey(block.Bytes); err == nil {
		return k, nil
	}
	if k, err := x509.ParsePKCS1PublicKey(block.Bytes); err == nil {
		return k, nil
	}
	if cert, err := x509.ParseCertificate(block.Bytes); err == nil {
		return cert.PublicKey, nil
	}
	return nil, fmt.Errorf("%s: not a PKIX or PKCS#1 public key or a certificate", path)
}

func readPrivateKey(path string) (crypto.Signer, error) {
	block, err := readPEM(path)
	if err != nil {
		return nil, err
	}
	var key any
	if key, err = x509.ParsePKCS8PrivateKey(block.Bytes); err != nil {
		if key, err = x509.ParseECPrivateKey(block.Bytes); err != nil {
			if key, err = x509.ParsePKCS1PrivateKey(block.Bytes); err != nil {
				return nil, fmt.Errorf("%s: not a PKCS#8, EC or PKCS#1 private key", path)
			}
		}
	}
	s, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("%s: the key cannot sign", path)
	}
	return s, nil
}

// configTokens returns the tokens of the configured key, for the commands that mint with it
// (token, the in-process mcp). Unlike serve, they create no secret: one must exist.
func configTokens(cfg Config) (*token.Tokens, error) {
	tc, _, err := tokenConfig(cfg, false)
	if err != nil {
		return nil, err
	}
	return token.NewTokens(tc)
}
