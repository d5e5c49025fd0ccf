// etcd for the testbed: the server at the version k8s.io/kubernetes pins (its go.mod),
// built from the Go module proxy. etcdmain is etcd's own command-line entry point.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
