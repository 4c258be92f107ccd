package main

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentcards/agentcards/authz/token"
	"github.com/agentcards/agentcards/web/webtest"
)

// writeKeys writes the PEM files of the key tests into dir, by name: ec (P-256), ed (Ed25519),
// p384 and rsa private keys as .pem (PKCS#8), ec and ed public keys as .pub (PKIX), notpem (text)
// and garbage.pem (a PEM block whose bytes are no key).
func writeKeys(t *testing.T, dir string) map[string]string {
	t.Helper()
	paths := map[string]string{}
	write := func(name string, b []byte) {
		t.Helper()
		paths[name] = filepath.Join(dir, name)
		if err := os.WriteFile(paths[name], b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	private := func(name string, k crypto.Signer) {
		t.Helper()
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		write(name+".pem", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
		der, err = x509.MarshalPKIXPublicKey(k.Public())
		if err != nil {
			t.Fatal(err)
		}
		write(name+".pub", pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
	}
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	_, ed, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := rsa.GenerateKey(rand.Reader, 1024) // the type is what matters, not the strength
	if err != nil {
		t.Fatal(err)
	}
	private("ec", ec)
	private("ed", ed)
	private("p384", p384)
	private("rsa", rs)
	write("notpem", []byte("this is not PEM\n"))
	write("garbage.pem", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte("no key")}))
	return paths
}

// TestKeyFilesRefused: serve refuses to start, before it opens the database, on every key file
// it cannot use: auth.publicKeyFiles, auth.privateKeyFile and keys.signingKeyFiles that are
// missing, not PEM, not a key of the right kind, or a key of the wrong type; and on an
// auth.algorithm outside its set. Each error names the file or the setting.
func TestKeyFilesRefused(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	k := writeKeys(t, dir)
	missing := filepath.Join(dir, "missing.pem")
	es256 := []string{"AGENTCARDS_AUTH_ALGORITHM=ES256", "AGENTCARDS_AUTH_PUBLIC_KEY_FILES=" + k["ec.pub"]}
	for _, c := range []struct {
		name    string
		environ []string
		want    []string // each in the error
		is      error
	}{
		{"public key missing", []string{"AGENTCARDS_AUTH_ALGORITHM=ES256", "AGENTCARDS_AUTH_PUBLIC_KEY_FILES=" + k["ec.pub"] + "," + missing},
			[]string{missing}, fs.ErrNotExist},
		{"public key not PEM", []string{"AGENTCARDS_AUTH_ALGORITHM=ES256", "AGENTCARDS_AUTH_PUBLIC_KEY_FILES=" + k["notpem"]},
			[]string{k["notpem"], "no PEM block"}, nil},
		{"public key a private key", []string{"AGENTCARDS_AUTH_ALGORITHM=ES256", "AGENTCARDS_AUTH_PUBLIC_KEY_FILES=" + k["ec.pem"]},
			[]string{k["ec.pem"], "not a PKIX or PKCS#1 public key or a certificate"}, nil},
		{"public key of another type", []string{"AGENTCARDS_AUTH_ALGORITHM=ES256", "AGENTCARDS_AUTH_PUBLIC_KEY_FILES=" + k["ec.pub"] + "," + k["ed.pub"]},
			[]string{"public key 1", "ed25519.PublicKey key cannot verify ES256"}, nil},
		{"no public key", []string{"AGENTCARDS_AUTH_ALGORITHM=EdDSA"}, []string{"EdDSA needs at least one public key"}, nil},
		{"private key missing", append(es256, "AGENTCARDS_AUTH_PRIVATE_KEY_FILE="+missing), []string{missing}, fs.ErrNotExist},
		{"private key not PEM", append(es256, "AGENTCARDS_AUTH_PRIVATE_KEY_FILE="+k["notpem"]), []string{k["notpem"], "no PEM block"}, nil},
		{"private key a public key", append(es256, "AGENTCARDS_AUTH_PRIVATE_KEY_FILE="+k["ec.pub"]),
			[]string{k["ec.pub"], "not a PKCS#8, EC or PKCS#1 private key"}, nil},
		{"private key of another type", append(es256, "AGENTCARDS_AUTH_PRIVATE_KEY_FILE="+k["rsa.pem"]),
			[]string{"private key", "rsa.PublicKey key cannot verify ES256"}, nil},
		{"signing key missing", []string{"AGENTCARDS_KEYS_SIGNING_KEY_FILES=" + k["ec.pem"] + "," + missing},
			[]string{"keys.signingKeyFiles", missing}, fs.ErrNotExist},
		{"signing key not PEM", []string{"AGENTCARDS_KEYS_SIGNING_KEY_FILES=" + k["notpem"]},
			[]string{"keys.signingKeyFiles", k["notpem"], "no PEM block"}, nil},
		{"signing key no key", []string{"AGENTCARDS_KEYS_SIGNING_KEY_FILES=" + k["garbage.pem"]},
			[]string{"keys.signingKeyFiles", k["garbage.pem"], "not a PKCS#8, EC or PKCS#1 private key"}, nil},
		{"signing key a public key", []string{"AGENTCARDS_KEYS_SIGNING_KEY_FILES=" + k["ed.pub"]},
			[]string{"keys.signingKeyFiles", k["ed.pub"], "private key"}, nil},
		{"signing key P-384", []string{"AGENTCARDS_KEYS_SIGNING_KEY_FILES=" + k["p384.pem"]},
			[]string{"keys.signingKeyFiles", k["p384.pem"], "only P-256"}, nil},
		{"signing key RSA", []string{"AGENTCARDS_KEYS_SIGNING_KEY_FILES=" + k["ed.pem"] + "," + k["rsa.pem"]},
			[]string{"keys.signingKeyFiles", k["rsa.pem"], "unsupported signing key type"}, nil},
		{"algorithm ES512", []string{"AGENTCARDS_AUTH_ALGORITHM=ES512", "AGENTCARDS_AUTH_PUBLIC_KEY_FILES=" + k["ec.pub"]},
			[]string{`algorithm "ES512" must be HS256, RS256, ES256 or EdDSA`}, nil},
		{"algorithm none", []string{"AGENTCARDS_AUTH_ALGORITHM=none"}, []string{`algorithm "none" must be`}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			// A bad key must stop serve at once; were it taken, serve would run until ctx ends.
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			environ := append([]string{"AGENTCARDS_AUTH_SECRET=" + webtest.Secret, "AGENTCARDS_SERVER_ADDR=127.0.0.1:0", "AGENTCARDS_SERVER_METRICS_ADDR=127.0.0.1:0",
				"AGENTCARDS_DATA_DIR=" + filepath.Join(t.TempDir(), "data")}, c.environ...)
			var stdout, stderr strings.Builder
			err := run(ctx, []string{"serve"}, &stdout, &stderr, environ)
			if err == nil || ctx.Err() != nil {
				t.Fatalf("serve started: %v\n%s", err, stdout.String())
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if c.is != nil && !errors.Is(err, c.is) {
				t.Errorf("error %q is not %v", err, c.is)
			}
		})
	}
}

// TestKeyFilesAccepted is the other side of TestKeyFilesRefused: the same files, where they
// fit, are used: tokens minted with the private key verify with the public one, and signing keys
// are taken oldest first, the last one signing.
func TestKeyFilesAccepted(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	k := writeKeys(t, dir)
	for alg, name := range map[string]string{"ES256": "ec", "EdDSA": "ed"} {
		var stdout, stderr strings.Builder
		err := run(t.Context(), []string{"token", "--subject", "root", "--platform-admin"}, &stdout, &stderr, []string{
			"AGENTCARDS_AUTH_ALGORITHM=" + alg,
			"AGENTCARDS_AUTH_PUBLIC_KEY_FILES=" + k[name+".pub"],
			"AGENTCARDS_AUTH_PRIVATE_KEY_FILE=" + k[name+".pem"],
		})
		if err != nil {
			t.Fatalf("%s token: %v", alg, err)
		}
		pub, err := readPublicKey(k[name+".pub"])
		if err != nil {
			t.Fatal(err)
		}
		tokens, err := token.NewTokens(token.Config{Algorithm: alg, PublicKeys: []crypto.PublicKey{pub}})
		if err != nil {
			t.Fatal(err)
		}
		if p, err := tokens.Verify(strings.TrimSpace(stdout.String())); err != nil || p.Subject != "root" || !p.PlatformAdmin {
			t.Fatalf("%s token: %+v %v", alg, p, err)
		}
	}

	cfg, err := loadConfig("", env(map[string]string{"AGENTCARDS_KEYS_SIGNING_KEY_FILES": k["ec.pem"] + "," + k["ed.pem"]}))
	if err != nil {
		t.Fatal(err)
	}
	keys, err := serviceKeys(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if cur := keys.Current(); cur.Alg != "EdDSA" {
		t.Errorf("signing with %s, want the last key (EdDSA)", cur.Alg)
	}
	ec, err := readPrivateKey(k["ec.pem"])
	if err != nil {
		t.Fatal(err)
	}
	older, err := token.NewServiceKey(ec)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := keys.Find(older.ID); !ok || got.Alg != "ES256" {
		t.Errorf("the older key %s is not published: %+v", older.ID, got)
	}
	if _, err := os.Stat(filepath.Join(cfg.DataDir, signingKeyFileName)); !os.IsNotExist(err) {
		t.Errorf("configured keys, yet a key was generated: %v", err)
	}
}
