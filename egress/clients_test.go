package egress

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sbx-sandbox/sbx/internal/sbxtest"
)

// node22 is the Node used for pi (env-proxy support needs 22.21+); the e2e
// setup downloads it.
const node22 = "../testdata/e2e/.cache/pi-env/node_modules/.bin/node"

// proxyEnv is the environment a client gets: the host's without any proxy
// setting, plus the variables sbx sets in a sandbox.
func proxyEnv(proxyAddr string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !strings.HasSuffix(strings.ToLower(k), "_proxy") {
			env = append(env, kv)
		}
	}
	u := "http://" + proxyAddr
	for _, k := range []string{"HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY"} {
		env = append(env, k+"="+u, strings.ToLower(k)+"="+u)
	}
	return append(env, "NO_PROXY=localhost,127.0.0.1,::1", "no_proxy=localhost,127.0.0.1,::1", "NODE_USE_ENV_PROXY=1")
}

// TestClientsHonourProxyEnv runs curl, Python's urllib and Node's fetch in
// a network namespace that has nothing but lo and the proxy's listener:
// they reach the HTTPS and HTTP servers on the host only by honouring the
// proxy variables (and nothing they do can leave the machine).
func TestClientsHonourProxyEnv(t *testing.T) {
	ns := newNetns(t)
	ca := newTestCA(t)
	tlsSrv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello https %s", r.URL.Path)
	}))
	tlsSrv.TLS = &tls.Config{Certificates: []tls.Certificate{ca.server}}
	tlsSrv.StartTLS()
	defer tlsSrv.Close()
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello http %s", r.URL.Path)
	}))
	defer plain.Close()
	tport := portOf(t, tlsSrv.Listener.Addr().String())
	hport := portOf(t, plain.Listener.Addr().String())

	ln, err := ListenInNetns(ns, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tp := serveProxy(t, ln,
		[]string{"allowed.test:" + tport, "allowed.test:" + hport, "127.0.0.1:" + tport, "127.0.0.1:" + hport},
		map[string]string{"allowed.test": "127.0.0.1", "evil.test": "127.0.0.1"}, nil)
	env := proxyEnv(tp.addr)
	httpsURL := "https://allowed.test:" + tport + "/secure"
	httpURL := "http://allowed.test:" + hport + "/plain"
	evilURL := "https://evil.test:" + tport + "/"

	// run runs argv inside the namespace.
	run := func(t *testing.T, extraEnv []string, argv ...string) (string, error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, "nsenter", append([]string{"--net=" + ns, "--"}, argv...)...)
		cmd.Env = append(append([]string(nil), env...), extraEnv...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return string(out) + " (stderr: " + stderr.String() + ")", err
		}
		return string(out), nil
	}
	expectDenied := func(t *testing.T, before int) {
		t.Helper()
		d := tp.denials()
		if len(d) != before+1 || d[before].String() != "connect evil.test:"+tport+" (not allowed)" {
			t.Errorf("reported %v, want one more: connect evil.test:%s (not allowed)", d, tport)
		}
	}
	if _, err := exec.LookPath("nsenter"); err != nil {
		t.Fatalf("nsenter (util-linux) is needed: %v", err)
	}

	t.Run("curl", func(t *testing.T) {
		if _, err := exec.LookPath("curl"); err != nil {
			t.Skip("curl not installed")
		}
		curl := []string{"curl", "-sS", "--max-time", "20", "--cacert", ca.pemFile}
		if out, err := run(t, nil, append(curl, httpsURL)...); err != nil || out != "hello https /secure" {
			t.Errorf("curl %s: %q %v", httpsURL, out, err)
		}
		if out, err := run(t, nil, append(curl, httpURL)...); err != nil || out != "hello http /plain" {
			t.Errorf("curl %s: %q %v", httpURL, out, err)
		}
		// Without the proxy there is no way out of the namespace.
		if out, err := run(t, nil, append(curl, "--noproxy", "*", httpsURL)...); err == nil {
			t.Errorf("curl --noproxy '*' reached the server: %q", out)
		}
		n := len(tp.denials())
		out, err := run(t, nil, append(curl, evilURL)...)
		if err == nil || !strings.Contains(out, "403") {
			t.Errorf("curl %s: %q %v, want CONNECT refused with 403", evilURL, out, err)
		}
		expectDenied(t, n)
	})

	t.Run("python", func(t *testing.T) {
		py, err := exec.LookPath("python3")
		if err != nil {
			sbxtest.Skip(t, sbxtest.Python3, "python3 not installed")
		}
		// The real interpreter, not a pyenv shim.
		if out, err := exec.Command(py, "-c", "import sys; print(sys.executable)").Output(); err == nil {
			py = strings.TrimSpace(string(out))
		}
		const script = `import ssl, sys, urllib.request
ctx = ssl.create_default_context(cafile=sys.argv[1])
try:
    r = urllib.request.urlopen(sys.argv[2], context=ctx, timeout=20)
    sys.stdout.write(r.read().decode())
except Exception as e:
    sys.stdout.write("error: %s" % e)
    sys.exit(1)
`
		for url, want := range map[string]string{httpsURL: "hello https /secure", httpURL: "hello http /plain"} {
			if out, err := run(t, nil, py, "-c", script, ca.pemFile, url); err != nil || out != want {
				t.Errorf("urllib %s: %q %v", url, out, err)
			}
		}
		n := len(tp.denials())
		out, err := run(t, nil, py, "-c", script, ca.pemFile, evilURL)
		if err == nil || !strings.Contains(out, "403") {
			t.Errorf("urllib %s: %q %v, want 403", evilURL, out, err)
		}
		expectDenied(t, n)
	})

	t.Run("node22", func(t *testing.T) {
		node, err := filepath.Abs(node22)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(node); err != nil {
			t.Skipf("Node 22 for pi not set up (%v); the pi e2e setup downloads it", err)
		}
		ver, _ := exec.Command(node, "--version").Output()
		t.Logf("node %s", strings.TrimSpace(string(ver)))
		const script = `fetch(process.argv[1]).then(async r => {
  const t = await r.text(); process.stdout.write(t); if (!r.ok) process.exit(1)
}).catch(e => { process.stdout.write("error: " + e + " cause: " + (e.cause && (e.cause.stack || e.cause))); process.exit(1) })`
		extra := []string{"NODE_EXTRA_CA_CERTS=" + ca.pemFile}
		for url, want := range map[string]string{httpsURL: "hello https /secure", httpURL: "hello http /plain"} {
			if out, err := run(t, extra, node, "-e", script, url); err != nil || out != want {
				t.Errorf("fetch %s: %q %v", url, out, err)
			}
		}
		n := len(tp.denials())
		// undici turns the proxy's 403 into "Request was cancelled": the
		// report is what names the reason.
		if out, err := run(t, extra, node, "-e", script, evilURL); err == nil {
			t.Errorf("fetch %s succeeded: %q", evilURL, out)
		}
		expectDenied(t, n)
		// NODE_USE_ENV_PROXY is what makes fetch use the proxy.
		noEnv := append(extra, "NODE_USE_ENV_PROXY=0")
		if out, err := run(t, noEnv, node, "-e", script, httpsURL); err == nil {
			t.Errorf("fetch without NODE_USE_ENV_PROXY reached the server: %q", out)
		}
	})
}
