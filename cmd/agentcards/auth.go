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

	"github.com/agentcards/agentcards/authz"
)

// secretFileName is where a generated HS256 secret lives inside the data directory.
const secretFileName = "jwt-secret"

// tokenConfig builds the JWT settings, reading keys from files and, for HS256 without a configured
// secret, generating one into the data directory on first use (mode 0600) and reusing it after,
// so `agentcards token` mints tokens that `agentcards serve` accepts.
func tokenConfig(cfg Config) (authz.TokenConfig, bool, error) {
	tc := authz.TokenConfig{
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
			s, err := loadOrCreateSecret(filepath.Join(cfg.DataDir, secretFileName))
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

// loadOrCreateSecret returns the secret in path, creating it with 32 random bytes if absent.
// O_EXCL makes two processes starting at once agree on one secret.
func loadOrCreateSecret(path string) (string, error) {
	if b, err := os.ReadFile(path); err == nil {
		s := strings.TrimSpace(string(b))
		if len(s) < 32 {
			return "", fmt.Errorf("%s: the secret is shorter than 32 characters", path)
		}
		return s, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", err
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
