// Command pause is the test node's sandbox image's only program: it holds a pod's
// namespaces open, reaps the orphans the pod's processes leave, and exits at SIGTERM or
// SIGINT, which is all the kubelet asks of a pod's first container. (No registry is
// reachable from the test machines, so the image is built here.)
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	children := make(chan os.Signal, 16)
	signal.Notify(children, syscall.SIGCHLD)
	for {
		select {
		case <-stop:
			os.Exit(0)
		case <-children:
			for {
				pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
				if pid <= 0 || err != nil {
					break
				}
			}
		}
	}
}
