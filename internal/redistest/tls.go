package redistest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bananas-go/bananas/internal/testserver"
)

// Certs are PEM files made for one test: a CA, a server certificate it
// signed for 127.0.0.1, ::1 and localhost, a client certificate it signed,
// and a second CA that signed nothing of these (for a client that must not
// trust the server).
type Certs struct {
	CAFile                        string
	ServerCertFile, ServerKeyFile string
	ClientCertFile, ClientKeyFile string
	OtherCAFile                   string
}

// NewCerts writes a fresh set of certificates into a directory removed
// when the test ends.
func NewCerts(t testing.TB) *Certs {
	t.Helper()
	dir := t.TempDir()
	c := &Certs{
		CAFile:         filepath.Join(dir, "ca.pem"),
		ServerCertFile: filepath.Join(dir, "server.pem"),
		ServerKeyFile:  filepath.Join(dir, "server-key.pem"),
		ClientCertFile: filepath.Join(dir, "client.pem"),
		ClientKeyFile:  filepath.Join(dir, "client-key.pem"),
		OtherCAFile:    filepath.Join(dir, "other-ca.pem"),
	}
	if err := c.write(); err != nil {
		t.Fatalf("redistest: make certificates: %v", err)
	}
	return c
}

// Query is the TLS query of a connection URL that trusts the CA and, with
// client true, presents the client certificate.
func (c *Certs) Query(client bool) string {
	q := "tls_ca_file=" + url.QueryEscape(c.CAFile)
	if client {
		q += "&tls_cert_file=" + url.QueryEscape(c.ClientCertFile) + "&tls_key_file=" + url.QueryEscape(c.ClientKeyFile)
	}
	return q
}

func (c *Certs) write() error {
	ca, caKey, err := newCert(pkix.Name{CommonName: "redistest CA"}, nil, nil, func(t *x509.Certificate) {
		t.IsCA, t.BasicConstraintsValid = true, true
		t.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign
	})
	if err != nil {
		return err
	}
	other, _, err := newCert(pkix.Name{CommonName: "redistest other CA"}, nil, nil, func(t *x509.Certificate) {
		t.IsCA, t.BasicConstraintsValid = true, true
		t.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign
	})
	if err != nil {
		return err
	}
	// The server certificate is also the client certificate a cluster node
	// shows the nodes it dials on the TLS cluster bus, hence both usages.
	server, serverKey, err := newCert(pkix.Name{CommonName: "redistest server"}, ca, caKey, func(t *x509.Certificate) {
		t.KeyUsage = x509.KeyUsageDigitalSignature
		t.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
		t.DNSNames = []string{"localhost"}
		t.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	})
	if err != nil {
		return err
	}
	client, clientKey, err := newCert(pkix.Name{CommonName: "redistest client"}, ca, caKey, func(t *x509.Certificate) {
		t.KeyUsage = x509.KeyUsageDigitalSignature
		t.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	})
	if err != nil {
		return err
	}
	for _, f := range []struct {
		path  string
		block *pem.Block
	}{
		{c.CAFile, certBlock(ca)},
		{c.OtherCAFile, certBlock(other)},
		{c.ServerCertFile, certBlock(server)},
		{c.ServerKeyFile, keyBlock(serverKey)},
		{c.ClientCertFile, certBlock(client)},
		{c.ClientKeyFile, keyBlock(clientKey)},
	} {
		if f.block == nil {
			return fmt.Errorf("encode %s", f.path)
		}
		if err := os.WriteFile(f.path, pem.EncodeToMemory(f.block), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// newCert makes a certificate for subject, signed by parent (self-signed
// when parent is nil), valid from an hour ago for a day.
func newCert(subject pkix.Name, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, edit func(*x509.Certificate)) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      subject,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
	}
	edit(tmpl)
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return cert, key, err
}

func certBlock(c *x509.Certificate) *pem.Block {
	return &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw}
}

func keyBlock(k *ecdsa.PrivateKey) *pem.Block {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil
	}
	return &pem.Block{Type: "PRIVATE KEY", Bytes: der}
}

// TLSServer is a redis-server that serves TLS on TLSAddr. It keeps its
// plain-TCP port too, on loopback: the embedded Server's Addr, URL and
// Client reach it as the default user without TLS, to set the server up
// (ACL SETUSER, readiness checks) apart from the client under test.
type TLSServer struct {
	*Server
	TLSPort int
	Certs   *Certs
}

func (s *TLSServer) TLSAddr() string { return "127.0.0.1:" + strconv.Itoa(s.TLSPort) }

// TLSURL is a rediss:// URL of the server that trusts its CA and, with
// client true, presents the client certificate.
func (s *TLSServer) TLSURL(client bool) string {
	return "rediss://" + s.TLSAddr() + "/0?" + s.Certs.Query(client)
}

// StartTLS starts a private server with certs' server certificate, stopped
// when the test ends. With authClients it refuses TLS clients that present
// no certificate signed by the CA (tls-auth-clients yes).
func StartTLS(t testing.TB, certs *Certs, authClients bool) *TLSServer {
	t.Helper()
	return testserver.Private(t, func() (*TLSServer, error) { return startTLS(certs, authClients, nil) })
}

// startTLS starts a TLS server, retrying with another TLS port when the one
// picked was taken meanwhile (start itself retries the plain port).
func startTLS(certs *Certs, authClients bool, extra []string) (*TLSServer, error) {
	auth := "no"
	if authClients {
		auth = "yes"
	}
	var last error
	for range 5 {
		port, err := FreePort()
		if err != nil {
			return nil, err
		}
		args := append([]string{"--tls-port", strconv.Itoa(port),
			"--tls-cert-file", certs.ServerCertFile, "--tls-key-file", certs.ServerKeyFile,
			"--tls-ca-cert-file", certs.CAFile, "--tls-auth-clients", auth}, extra...)
		s, err := start(args)
		if err == nil {
			return &TLSServer{Server: s, TLSPort: port, Certs: certs}, nil
		}
		last = err
	}
	return nil, last
}

// TLSCluster is a Redis Cluster of three masters that speaks TLS to its
// clients and on its cluster bus (tls-cluster yes): CLUSTER SLOTS over TLS
// announces the nodes' TLS ports. Every node requires a client certificate
// signed by the CA.
type TLSCluster struct {
	nodes []*TLSServer
	Certs *Certs
}

// Nodes are the cluster's servers, the masters of its three slot ranges.
func (c *TLSCluster) Nodes() []*TLSServer { return c.nodes }

// TLSAddrs are the nodes' TLS addresses.
func (c *TLSCluster) TLSAddrs() []string {
	out := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.TLSAddr()
	}
	return out
}

// TLSURL is a rediss+cluster:// URL of every node that trusts the CA and,
// with client true, presents the client certificate.
func (c *TLSCluster) TLSURL(client bool) string {
	return "rediss+cluster://" + strings.Join(c.TLSAddrs(), ",") + "?" + c.Certs.Query(client)
}

// Close stops every node. Idempotent.
func (c *TLSCluster) Close() {
	for _, n := range c.nodes {
		n.Close()
	}
}

// StartTLSCluster starts a private TLS cluster, stopped when the test ends.
func StartTLSCluster(t testing.TB, certs *Certs) *TLSCluster {
	t.Helper()
	c := &TLSCluster{Certs: certs}
	t.Cleanup(c.Close)
	for range 3 {
		n, err := startTLS(certs, true, []string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "5000", "--tls-cluster", "yes", "--tls-replication", "yes"})
		if err != nil {
			t.Fatal(err)
		}
		c.nodes = append(c.nodes, n)
	}
	if err := c.form(); err != nil {
		t.Fatal(err)
	}
	return c
}

// form assigns the slots in three ranges and introduces the nodes to each
// other by their TLS ports (with tls-cluster, a node's bus port is its TLS
// port + 10000, which FreePort checked free), over each node's plain port,
// then waits until every node sees a healthy cluster of three.
func (c *TLSCluster) form() error {
	ctx := context.Background()
	ranges := [][2]int{{0, 5460}, {5461, 10922}, {10923, 16383}}
	clients := make([]*redis.Client, len(c.nodes))
	for i, n := range c.nodes {
		clients[i] = redis.NewClient(&redis.Options{Addr: n.Addr()})
		defer clients[i].Close()
		if err := clients[i].Do(ctx, "CLUSTER", "ADDSLOTSRANGE", ranges[i][0], ranges[i][1]).Err(); err != nil {
			return fmt.Errorf("redistest: cluster addslotsrange on %s: %w", n.Addr(), err)
		}
	}
	for _, n := range c.nodes[1:] {
		if err := clients[0].ClusterMeet(ctx, "127.0.0.1", strconv.Itoa(n.TLSPort)).Err(); err != nil {
			return fmt.Errorf("redistest: cluster meet %s: %w", n.TLSAddr(), err)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		var notReady error
		for i, cl := range clients {
			info, err := cl.ClusterInfo(ctx).Result()
			if err == nil && (!strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_known_nodes:3")) {
				err = fmt.Errorf("not yet a healthy cluster of three")
			}
			if err != nil {
				notReady = fmt.Errorf("%s: %w", c.nodes[i].TLSAddr(), err)
				break
			}
		}
		if notReady == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redistest: TLS cluster not formed within 20s: %w", notReady)
		}
		time.Sleep(50 * time.Millisecond) // readiness wait, bounded by the deadline above
	}
}
