// A git server over plain HTTP on 127.0.0.1 for the Argo CD tests of the test control
// plane: Flux's gittestserver (go-git's gitkit) serving the bare repositories under
// DIR, created on first push. Prints its URL, then serves until SIGTERM or SIGINT.
//
//	gitserver DIR
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/fluxcd/pkg/gittestserver"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gitserver DIR")
		os.Exit(2)
	}
	server := gittestserver.NewGitServer(os.Args[1]).AutoCreate()
	if err := server.StartHTTP(); err != nil {
		fmt.Fprintln(os.Stderr, "gitserver:", err)
		os.Exit(1)
	}
	fmt.Println(server.HTTPAddress())
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	<-stop
	server.StopHTTP()
}
