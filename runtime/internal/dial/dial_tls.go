package dial

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"
)

// The TLS parameters of a connection URL's query. go-redis reads rediss://
// as TLS verified against the system's roots and has no parameter for a
// private CA or a client certificate; these name the PEM files. They are
// taken out of the URL before go-redis parses the rest, since go-redis
// refuses parameters it does not know. skip_verify is go-redis's own name,
// taken here too so that cluster URLs (which go-redis does not parse for
// us) accept it as well.
const (
	paramCAFile     = "tls_ca_file"     // CA certificates (PEM) the server's certificate must chain to, instead of the system's roots
	paramCertFile   = "tls_cert_file"   // client certificate (PEM), for servers run with tls-auth-clients
	paramKeyFile    = "tls_key_file"    // its private key (PEM)
	paramServerName = "tls_server_name" // name the server's certificate must carry, instead of the URL's host
	paramSkipVerify = "skip_verify"     // true: no verification of the server's certificate at all
)

var tlsParamNames = []string{paramCAFile, paramCertFile, paramKeyFile, paramServerName, paramSkipVerify}

// tlsParams are the TLS parameters of one URL.
type tlsParams struct {
	caFile, certFile, keyFile, serverName string
	skipVerify                            bool
	given                                 []string // the names present, in tlsParamNames order
}

// splitTLSParams returns query without the TLS parameters (encoded again,
// or "" when nothing else is left) and the parameters. Like go-redis, the
// last of repeated values wins.
func splitTLSParams(query string) (string, tlsParams, error) {
	var p tlsParams
	if query == "" {
		return "", p, nil
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return "", p, fmt.Errorf("query %q: %w", query, err)
	}
	for _, name := range tlsParamNames {
		vs, ok := q[name]
		if !ok {
			continue
		}
		delete(q, name)
		v := vs[len(vs)-1]
		p.given = append(p.given, name)
		if name == paramSkipVerify {
			switch v {
			case "true", "1":
				p.skipVerify = true
			case "false", "0":
			default:
				return "", p, fmt.Errorf("%s=%q: want true or false", name, v)
			}
			continue
		}
		if v == "" {
			return "", p, fmt.Errorf("%s is empty: name a PEM file", name)
		}
		switch name {
		case paramCAFile:
			p.caFile = v
		case paramCertFile:
			p.certFile = v
		case paramKeyFile:
			p.keyFile = v
		case paramServerName:
			p.serverName = v
		}
	}
	if len(q) == 0 {
		return "", p, nil
	}
	return q.Encode(), p, nil
}

// requireTLS refuses TLS parameters on a URL whose scheme is not TLS: they
// would be ignored, and the connection would go out in plain text.
func (p tlsParams) requireTLS(scheme string) error {
	if len(p.given) == 0 {
		return nil
	}
	want := "rediss://"
	if strings.HasSuffix(scheme, "+cluster") {
		want = "rediss+cluster://"
	}
	return fmt.Errorf("%s needs TLS, which %s:// does not use: write %s", p.given[0], scheme, want)
}

// apply sets c up as the parameters say, reading the files they name.
func (p tlsParams) apply(c *tls.Config) error {
	if p.caFile != "" {
		pem, err := os.ReadFile(p.caFile)
		if err != nil {
			return fmt.Errorf("%s: %w", paramCAFile, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("%s %s: no PEM-encoded certificate in it", paramCAFile, p.caFile)
		}
		c.RootCAs = pool
	}
	switch {
	case p.certFile != "" && p.keyFile == "":
		return fmt.Errorf("%s needs %s: the client certificate's private key", paramCertFile, paramKeyFile)
	case p.keyFile != "" && p.certFile == "":
		return fmt.Errorf("%s needs %s: the client certificate of the key", paramKeyFile, paramCertFile)
	case p.certFile != "":
		cert, err := tls.LoadX509KeyPair(p.certFile, p.keyFile)
		if err != nil {
			return fmt.Errorf("%s %s with %s %s: %w", paramCertFile, p.certFile, paramKeyFile, p.keyFile, err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	if p.serverName != "" {
		c.ServerName = p.serverName
	}
	c.InsecureSkipVerify = p.skipVerify
	return nil
}

// parseServerURL reads a redis:// or rediss:// URL: go-redis's ParseURL,
// with the TLS parameters above.
func parseServerURL(raw string) (*redis.Options, error) {
	scheme, _, _ := strings.Cut(raw, "://")
	base, query, _ := strings.Cut(raw, "?")
	rest, p, err := splitTLSParams(query)
	if err != nil {
		return nil, err
	}
	if scheme != "rediss" {
		if err := p.requireTLS(scheme); err != nil {
			return nil, err
		}
	}
	if rest != "" {
		base += "?" + rest
	}
	opt, err := redis.ParseURL(base)
	if err != nil {
		return nil, withoutURL(err)
	}
	if opt.TLSConfig != nil {
		if err := p.apply(opt.TLSConfig); err != nil {
			return nil, err
		}
	}
	return opt, nil
}

// clusterTLS reads the query of a cluster URL, which takes the TLS
// parameters and no other: a cluster client's options are code's to set
// (ConnectOption), and a parameter silently dropped would be worse than one
// refused. It returns the TLS configuration for rediss+cluster://, nil for
// redis+cluster://.
func clusterTLS(scheme, query string) (*tls.Config, error) {
	rest, p, err := splitTLSParams(query)
	if err != nil {
		return nil, err
	}
	if rest != "" {
		q, _ := url.ParseQuery(rest)
		return nil, fmt.Errorf("unknown option %s: a cluster URL takes only %s", strings.Join(slices.Sorted(maps.Keys(q)), ", "), strings.Join(tlsParamNames, ", "))
	}
	if scheme != "rediss+cluster" {
		return nil, p.requireTLS(scheme)
	}
	// No ServerName by default: each node's certificate is checked against
	// the address the client dials, which is the one the cluster announces
	// for the node, not the seed address of the URL.
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if err := p.apply(c); err != nil {
		return nil, err
	}
	return c, nil
}

// withoutURL drops the URL that net/url puts in its parse errors: it holds
// the password, and the caller names the URL itself, redacted.
func withoutURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
