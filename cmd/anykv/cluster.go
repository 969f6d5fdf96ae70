package main

import (
	"flag"
	"fmt"
	"io"

	"anykv/internal/cluster"
)

// clusterMain is `anykv cluster up|down|status`: a local cluster of a distributed datastore for anykv front ends
// to serve (internal/cluster).
func clusterMain(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, clusterUsage)
		return 2
	}
	fs := flag.NewFlagSet("anykv cluster "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", "anykv-cluster", "directory of the cluster's data, logs and state")
	engine := fs.String("engine", "etcd", "datastore: etcd, redis-cluster or cassandra")
	nodes := fs.Int("nodes", 3, "number of members (redis-cluster: 3 masters alone, 6: with a replica each, 9: with two; cassandra: nodes on 127.0.0.1..N)")
	hints := fs.Bool("hints", true, "cassandra: hinted handoff; false leaves a restarted node stale until a read repairs it (to see what reads at ONE return)")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	switch args[0] {
	case "up":
		st, err := cluster.Up(*engine, *nodes, *dir, cluster.Options{NoHints: !*hints})
		if err != nil {
			fmt.Fprintln(stderr, "anykv cluster up:", err)
			return 1
		}
		serve := st.URL
		if st.Engine == "cassandra" {
			serve += "?slots=16" // writes of different slots run their Paxos rounds side by side (docs/scale.md)
		}
		fmt.Fprintf(stdout, "%s cluster of %d members up in %s\nserve it with: anykv serve --engine %s\nstop it with:  anykv cluster down --dir %s\n",
			st.Engine, len(st.Members), *dir, serve, *dir)
		return 0
	case "down":
		skipped, err := cluster.Down(*dir)
		for _, s := range skipped { // a member that died and whose pid another process now has
			fmt.Fprintln(stderr, "anykv cluster down:", s)
		}
		if err != nil {
			fmt.Fprintln(stderr, "anykv cluster down:", err)
			return 1
		}
		fmt.Fprintf(stdout, "cluster in %s stopped and removed\n", *dir)
		return 0
	case "status":
		st, err := cluster.Load(*dir)
		if err != nil {
			fmt.Fprintln(stderr, "anykv cluster status:", err)
			return 1
		}
		fmt.Fprintf(stdout, "%s cluster, --engine %s\n", st.Engine, st.URL)
		for i, m := range st.Members {
			fmt.Fprintf(stdout, "  %s pid %d at %s (%s)\n", m.Name, m.Pid, m.Addr, st.Running(i))
		}
		return 0
	}
	fmt.Fprint(stderr, clusterUsage)
	return 2
}

const clusterUsage = `Usage:
  anykv cluster up [--engine etcd|redis-cluster|cassandra] [--nodes 3] [--dir anykv-cluster] [--hints=false]
                                                                      start a local cluster on 127.0.0.1
  anykv cluster status [--dir anykv-cluster]                          its members and the --engine URL
  anykv cluster down [--dir anykv-cluster]                            stop it and remove its data
`
