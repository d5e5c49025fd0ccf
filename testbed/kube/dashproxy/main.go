// dashproxy: the forward HTTP proxy the testbed's KubeRay operator uses (HTTP_PROXY) to reach
// the Ray dashboards of the clusters under test.
//
// The operator dials a RayCluster's dashboard at <head-svc>.<ns>.svc.cluster.local:8265
// (ray-operator/controllers/ray/utils: FetchHeadServiceURL), with Go's default transport,
// which honours HTTP_PROXY. In the testbed no pod runs, so each cluster's dashboard is a
// process on loopback (a real Ray head, or the tests' fake dashboard). A test says which by
// writing a route file:
//
//	<routes>/<namespace>/<service>   one cluster's head service
//	<routes>/<namespace>/_default    every service of the namespace (each test has its own)
//
// holding lines "<port> 127.0.0.1:<local port>" (the service port, the loopback address that
// stands for it). Only loopback targets are dialled: anything else is refused with 502, as is
// a host with no route, so no request ever leaves 127.0.0.0/8.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
)

var routes string

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "loopback address to listen on")
	flag.StringVar(&routes, "routes", "", "directory of route files (<ns>/<svc> or <ns>/_default)")
	portFile := flag.String("port-file", "", "write the port listened on to this file")
	flag.Parse()
	if routes == "" {
		log.Fatal("dashproxy: --routes is required")
	}
	host, _, err := net.SplitHostPort(*listen)
	if err != nil || !isLoopback(host) {
		log.Fatalf("dashproxy: --listen must be a loopback address, not %q", *listen)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatalf("dashproxy: %v", err)
	}
	if *portFile != "" {
		port := ln.Addr().(*net.TCPAddr).Port
		if err := os.WriteFile(*portFile, []byte(fmt.Sprintf("%d\n", port)), 0o644); err != nil {
			log.Fatalf("dashproxy: %v", err)
		}
	}
	log.Printf("dashproxy: listening on %s, routes in %s", ln.Addr(), routes)
	// No proxy of its own, and a new connection per request (the dashboards come and go).
	transport := &http.Transport{Proxy: nil, DisableKeepAlives: true}
	var served atomic.Int64
	log.Fatal(http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := served.Add(1)
		if r.Method == http.MethodConnect {
			http.Error(w, "dashproxy: CONNECT is not proxied (dashboards are plain HTTP)", http.StatusMethodNotAllowed)
			return
		}
		target, why := route(r.URL.Host)
		if target == "" {
			log.Printf("#%d %s %s -> refused: %s", n, r.Method, r.URL, why)
			http.Error(w, "dashproxy: "+why, http.StatusBadGateway)
			return
		}
		log.Printf("#%d %s %s -> %s", n, r.Method, r.URL, target)
		to := &url.URL{Scheme: "http", Host: target}
		proxy := &httputil.ReverseProxy{
			Rewrite:       func(pr *httputil.ProxyRequest) { pr.SetURL(to) },
			FlushInterval: -1, // stream log tails as they come
			Transport:     transport,
		}
		proxy.ServeHTTP(w, r)
	})))
}

// route maps "<svc>.<ns>.svc[.cluster.local][:port]" to the loopback address its route file
// names for that port.
func route(hostport string) (string, string) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = hostport, "80"
	}
	labels := strings.Split(strings.TrimSuffix(host, "."), ".")
	if len(labels) < 2 || strings.ContainsAny(labels[0]+labels[1], "/\\") {
		return "", fmt.Sprintf("no route for %q: expected <service>.<namespace>.svc.cluster.local", host)
	}
	svc, ns := labels[0], labels[1]
	for _, file := range []string{filepath.Join(routes, ns, svc), filepath.Join(routes, ns, "_default")} {
		target, found := lookup(file, port)
		if !found {
			continue
		}
		h, _, err := net.SplitHostPort(target)
		if err != nil || !isLoopback(h) {
			return "", fmt.Sprintf("route %s names %q, which is not a loopback address", file, target)
		}
		return target, ""
	}
	return "", fmt.Sprintf("no route for service %s in namespace %s, port %s (write %s)", svc, ns, port, filepath.Join(routes, ns, svc))
}

func lookup(file, port string) (string, bool) {
	f, err := os.Open(file)
	if err != nil {
		return "", false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 2 && fields[0] == port {
			return fields[1], true
		}
	}
	return "", false
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
