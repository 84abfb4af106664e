// A registry that serves the OCI 1.1 referrers API, for the signature tests (#51):
// go-containerregistry's registry (the one `crane registry serve` runs), with its
// referrers support turned on, in memory, on the address given. Debian's
// docker-registry (distribution 2.8) has no referrers API, so without this the
// API path of `berth pin`, `promote` and `mirror` would meet no real server.
// Nothing here is product code: scripts/testenv builds it, the tests run it.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "the address to listen on")
	flag.Parse()
	listener, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatalf("listen on %s: %v", *addr, err)
	}
	// The tests wait for this line: the address, once the listener is open.
	fmt.Fprintf(os.Stdout, "listening on %s\n", listener.Addr())
	server := &http.Server{
		Handler:           registry.New(registry.WithReferrersSupport(true), registry.Logger(log.New(os.Stderr, "", log.LstdFlags))),
		ReadHeaderTimeout: 10 * time.Second,
	}
	log.Fatal(server.Serve(listener))
}
