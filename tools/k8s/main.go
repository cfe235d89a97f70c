// Command kube is the test cluster's one binary for etcd and the Kubernetes components: it
// runs the component named by the name it was started under (tools/k8s-build.sh links each
// name to it), so that a cold build links once instead of five times.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"go.etcd.io/etcd/server/v3/etcdmain"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
	kubelet "k8s.io/kubernetes/cmd/kubelet/app"
)

func main() {
	name := filepath.Base(os.Args[0])
	var command *cobra.Command
	switch name {
	case "etcd":
		etcdmain.Main(os.Args)
		return
	case "kube-apiserver":
		command = apiserver.NewAPIServerCommand()
	case "kube-controller-manager":
		command = controllermanager.NewControllerManagerCommand()
	case "kube-scheduler":
		command = scheduler.NewSchedulerCommand()
	case "kubelet":
		command = kubelet.NewKubeletCommand(context.Background())
	default:
		fmt.Fprintf(os.Stderr, "kube: started as %q; link it as etcd, kube-apiserver, "+
			"kube-controller-manager, kube-scheduler or kubelet\n", name)
		os.Exit(2)
	}
	os.Exit(cli.Run(command))
}
