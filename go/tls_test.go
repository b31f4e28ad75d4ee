package slotlane

// TLS against Debian's redis-server serving TLS only (ci/redis-plain.sh with
// SL_REDIS_TLS_DIR), certificates made by `openssl` now (ci/tls-certs.sh): a TLSConfig
// from files and from PEM bytes, ServerName, InsecureSkipVerify, mutual TLS, and each
// failure an ErrTLS saying what failed. Ports: block+52 (client certificates optional),
// block+53 (required).

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// tlsServers makes certificates and starts the two TLS servers for one test; they stop
// (by PID, ci/redis-plain.sh stop) when it ends, also on failure.
func tlsServers(t *testing.T) (certs string, port, mtlsPort int) {
	t.Helper()
	dir := t.TempDir()
	certs = filepath.Join(dir, "certs")
	if out, err := exec.Command("bash", filepath.Join(repoRoot, "ci", "tls-certs.sh"), certs).CombinedOutput(); err != nil {
		t.Fatalf("ci/tls-certs.sh: %v\n%s", err, out)
	}
	run := func(auth, name, action string, port int) error {
		args := []string{filepath.Join(repoRoot, "ci", "redis-plain.sh"), action, filepath.Join(dir, name)}
		if action == "start" {
			args = append(args, strconv.Itoa(port))
		}
		cmd := exec.Command("bash", args...)
		cmd.Env = append(os.Environ(), "SL_REDIS_TLS_DIR="+certs, "SL_REDIS_TLS_AUTH_CLIENTS="+auth)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("ci/redis-plain.sh %s: %v\n%s", action, err, out)
		}
		return nil
	}
	port, mtlsPort = portBlock+52, portBlock+53
	for _, s := range []struct {
		auth, name string
		port       int
	}{{"optional", "tls", port}, {"yes", "mtls", mtlsPort}} {
		s := s
		if err := run(s.auth, s.name, "start", s.port); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = run(s.auth, s.name, "stop", 0) })
	}
	return certs, port, mtlsPort
}

func tlsURL(port int) string { return fmt.Sprintf("rediss://127.0.0.1:%d", port) }

func wantTLSError(t *testing.T, opts *Options, want string) {
	t.Helper()
	opts.DialTimeout = 2 * time.Second
	c, err := NewClient(context.Background(), opts)
	if err == nil {
		c.Close()
		t.Fatalf("NewClient succeeded; want an ErrTLS saying %q", want)
	}
	if !errors.Is(err, ErrTLS) || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v; want an ErrTLS saying %q", err, want)
	}
}

func TestTLS(t *testing.T) {
	certs, port, mtlsPort := tlsServers(t)
	ca := filepath.Join(certs, "ca.crt")
	ctx := context.Background()

	t.Run("ca file, pipeline", func(t *testing.T) {
		c := newTestClient(t, tlsURL(port), &Options{TLS: &TLSConfig{CAFile: ca}})
		p := c.Pipeline()
		v := strings.Repeat("x", 100)
		for i := 0; i < 2000; i++ {
			p.Do("SET", fmt.Sprintf("go:tls:%d", i), v)
			p.Do("GET", fmt.Sprintf("go:tls:%d", i))
		}
		res, err := p.Exec(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i < len(res); i += 2 {
			if s, err := res[i].Text(); err != nil || s != v { // replies over many TLS records
				t.Fatalf("reply %d: %q %v", i, s, err)
			}
		}
	})
	t.Run("ca pem, shared by handles", func(t *testing.T) {
		pem, err := os.ReadFile(ca)
		if err != nil {
			t.Fatal(err)
		}
		c := newTestClient(t, tlsURL(port), &Options{TLS: &TLSConfig{CAPEM: pem}, PoolSize: 4})
		done := make(chan error, 8)
		for i := 0; i < 8; i++ { // concurrent calls make more handles, each with the same configuration
			go func() { _, err := c.Ping(ctx); done <- err }()
		}
		for i := 0; i < 8; i++ {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
	})
	t.Run("mutual TLS", func(t *testing.T) {
		wantTLSError(t, &Options{URL: tlsURL(mtlsPort), TLS: &TLSConfig{CAFile: ca}}, "certificate required")
		c := newTestClient(t, tlsURL(mtlsPort), &Options{TLS: &TLSConfig{CAFile: ca,
			CertFile: filepath.Join(certs, "client.crt"), KeyFile: filepath.Join(certs, "client.key")}})
		if _, err := c.Ping(ctx); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("verification failures", func(t *testing.T) {
		wantTLSError(t, &Options{URL: tlsURL(port), TLS: &TLSConfig{CAFile: filepath.Join(certs, "other-ca.crt")}},
			"certificate verify failed")
		wantTLSError(t, &Options{URL: tlsURL(port), TLS: &TLSConfig{CAFile: ca, ServerName: "wrong.example"}},
			"host name mismatch: expected wrong.example, certificate names 127.0.0.1")
		wantTLSError(t, &Options{URL: tlsURL(port), TLS: &TLSConfig{CAFile: "/nonexistent/ca.pem"}},
			"cannot load the CA file /nonexistent/ca.pem")
		c := newTestClient(t, tlsURL(port), &Options{TLS: &TLSConfig{CAFile: ca, ServerName: "wrong.example", VerifyChainOnly: true}})
		if _, err := c.Ping(ctx); err != nil {
			t.Fatal(err)
		}
		c = newTestClient(t, tlsURL(port), &Options{TLS: &TLSConfig{InsecureSkipVerify: true}})
		if _, err := c.Ping(ctx); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("plaintext client on a TLS port", func(t *testing.T) {
		_, err := NewClient(ctx, &Options{URL: fmt.Sprintf("redis://127.0.0.1:%d", port), DialTimeout: 2 * time.Second})
		if !errors.Is(err, ErrConnection) || !strings.Contains(err.Error(), "if the port speaks TLS, use rediss://") {
			t.Fatalf("got %v", err)
		}
	})
}
