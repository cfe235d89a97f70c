// Command coredns is CoreDNS with only the plugins the test cluster's Corefile uses
// (tools/k8s-up.sh): pods find each other by hostname through the kubernetes plugin, as on
// a real cluster, and a cold build skips the cloud plugins' SDKs.
package main

import (
	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/kubernetes"

	"github.com/coredns/coredns/coremain"
)

func main() {
	coremain.Run()
}
