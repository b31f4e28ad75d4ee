package slotlane

/*
#include <stdlib.h>
#include "slotlane.h"

static int slgo_tls_new(sl_tls **out, const char *ca_file, const char *ca_dir, const char *ca_pem, size_t ca_pem_len,
                        const char *cert_file, const char *key_file, const char *cert_pem, size_t cert_pem_len,
                        const char *key_pem, size_t key_pem_len, int verify, const char *server_name,
                        int node_names, char *errmsg, size_t cap)
{
	sl_tls_options o = SL_TLS_OPTIONS_INIT;
	o.ca_file = ca_file;
	o.ca_dir = ca_dir;
	o.ca_pem = ca_pem;
	o.ca_pem_len = ca_pem_len;
	o.cert_file = cert_file;
	o.key_file = key_file;
	o.cert_pem = cert_pem;
	o.cert_pem_len = cert_pem_len;
	o.key_pem = key_pem;
	o.key_pem_len = key_pem_len;
	o.verify = (sl_tls_verify)verify;
	o.server_name = server_name;
	o.node_names = (sl_tls_node_names)node_names;
	return sl_tls_new(out, &o, errmsg, cap);
}
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// TLSNodeNames says what the certificates of nodes learned from a cluster's topology are
// verified against (the seeds: TLSConfig.ServerName, else their address).
type TLSNodeNames int

const (
	// TLSNodesAddress: the address the cluster announces (an IP is matched against the
	// certificate's IP SANs). The default.
	TLSNodesAddress TLSNodeNames = iota
	// TLSNodesHostname: the host name the node announces (cluster-announce-hostname), else its address.
	TLSNodesHostname
	// TLSNodesServerName: ServerName for every node (one certificate for the cluster).
	TLSNodesServerName
	// TLSNodesChainOnly: the chain only.
	TLSNodesChainOnly
)

// TLSConfig makes every connection of a client TLS (a "rediss://" URL without it uses the
// system's CAs and full verification). The handshake is OpenSSL's, in the C core, inside
// DialTimeout; nothing is sent before the server's certificate is verified.
//
// A *tls.Config cannot be handed to the core: its roots (an x509.CertPool) and
// certificates (tls.Certificate, crypto.Signer keys) are Go objects OpenSSL cannot read,
// and its callbacks (VerifyPeerCertificate, GetClientCertificate) would run Go code inside
// OpenSSL's handshake on the core's thread. Give the same material as PEM instead: the
// files (CAFile, CertFile, KeyFile) or their bytes (CAPEM, CertPEM, KeyPEM; for a key in
// memory, x509.MarshalPKCS8PrivateKey and pem.EncodeToMemory).
type TLSConfig struct {
	CAFile string // PEM file of trusted CAs
	CADir  string // directory of hashed CA certificates (c_rehash)
	CAPEM  []byte // PEM bytes of trusted CAs (none of the three: the system's CAs)

	CertFile, KeyFile string // client certificate chain and its unencrypted key, PEM files (mutual TLS)
	CertPEM, KeyPEM   []byte // or the same as PEM bytes

	// ServerName is verified and sent as SNI for the seeds instead of their address.
	ServerName string
	// InsecureSkipVerify verifies nothing: whoever is on the path can read and change
	// the traffic. For tests only.
	InsecureSkipVerify bool
	// VerifyChainOnly verifies the chain but not the name.
	VerifyChainOnly bool
	// NodeNames: what discovered nodes are verified against (default TLSNodesAddress).
	NodeNames TLSNodeNames
}

// build loads the configuration (the files are read now: a bad one fails here, ErrTLS).
// The caller owns the reference it returns (sl_tls_free).
func (t *TLSConfig) build() (*C.sl_tls, error) {
	cs := func(s string) *C.char {
		if s == "" {
			return nil
		}
		return C.CString(s)
	}
	bs := func(b []byte) (*C.char, C.size_t) {
		if len(b) == 0 {
			return nil, 0
		}
		return (*C.char)(C.CBytes(b)), C.size_t(len(b))
	}
	caFile, caDir, certFile, keyFile, name := cs(t.CAFile), cs(t.CADir), cs(t.CertFile), cs(t.KeyFile), cs(t.ServerName)
	caPEM, caLen := bs(t.CAPEM)
	certPEM, certLen := bs(t.CertPEM)
	keyPEM, keyLen := bs(t.KeyPEM)
	for _, p := range []*C.char{caFile, caDir, certFile, keyFile, name, caPEM, certPEM, keyPEM} {
		if p != nil {
			defer C.free(unsafe.Pointer(p))
		}
	}
	verify := C.SL_TLS_VERIFY_FULL
	switch {
	case t.InsecureSkipVerify:
		verify = C.SL_TLS_VERIFY_NONE_INSECURE
	case t.VerifyChainOnly:
		verify = C.SL_TLS_VERIFY_CHAIN
	}
	var errbuf [512]C.char
	var out *C.sl_tls
	rc := C.slgo_tls_new(&out, caFile, caDir, caPEM, caLen, certFile, keyFile, certPEM, certLen, keyPEM, keyLen,
		C.int(verify), name, C.int(t.NodeNames), &errbuf[0], C.size_t(len(errbuf)))
	if rc != 0 {
		return nil, newError(int(rc), C.GoString(&errbuf[0]), nil)
	}
	return out, nil
}

// tlsRef holds a client's reference to its configuration; the finalizer releases it once
// nothing (the client, a handle still being created after its ctx ended) can use it. The
// core clients hold references of their own.
type tlsRef struct{ p *C.sl_tls }

func newTLSRef(t *TLSConfig) (*tlsRef, error) {
	p, err := t.build()
	if err != nil {
		return nil, err
	}
	r := &tlsRef{p}
	runtime.SetFinalizer(r, func(r *tlsRef) { C.sl_tls_free(r.p) })
	return r, nil
}

func (r *tlsRef) ptr() *C.sl_tls {
	if r == nil {
		return nil
	}
	return r.p
}
