// Command lwtexp is the experiment behind Cassandra's ?slots= (docs/benchmarks.md, "Cassandra over several
// slots"): workers doing anykv's commit pattern (read a partition's counter at QUORUM, then a conditional BATCH
// on it) over one or many partitions of a Cassandra cluster, with a node killed during the run (-kill PID, or
// -dir of an `anykv cluster up` to kill and restart m3 twice). It prints every round slower than 0.7 s, every
// gap without a successful round over 0.7 s, and the rates before and after the kill.
//
//	go run ./scripts/lwtexp -port P -parts 64 -d 40s -killat 10s -kill PID
package main

import (
	"flag"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"anykv/internal/cluster"
)

func main() {
	hosts := flag.String("hosts", "127.0.0.1,127.0.0.2,127.0.0.3", "")
	port := flag.Int("port", 9042, "")
	parts := flag.Int("parts", 1, "partitions")
	workers := flag.Int("workers", 4, "")
	dur := flag.Duration("d", 40*time.Second, "")
	killAt := flag.Duration("killat", 15*time.Second, "")
	killPid := flag.Int("kill", 0, "pid to SIGKILL at killat")
	dir := flag.String("dir", "", "cluster dir: kill m3 at killat, restart after 5s, kill again at 2*killat, restart")
	flag.Parse()
	c := gocql.NewCluster(strings.Split(*hosts, ",")...)
	c.Port = *port
	c.Consistency = gocql.Quorum
	c.SerialConsistency = gocql.Serial
	c.Timeout = 10 * time.Second
	c.ReconnectInterval = time.Second
	c.RetryPolicy = nil
	s, err := c.CreateSession()
	if err != nil {
		panic(err)
	}
	must := func(q string, a ...any) {
		if err := s.Query(q, a...).Exec(); err != nil {
			panic(err)
		}
	}
	must("CREATE KEYSPACE IF NOT EXISTS exp WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}")
	must("CREATE TABLE IF NOT EXISTS exp.t (p text, k text, version bigint, v blob, PRIMARY KEY (p, k))")
	for i := 0; i < *parts; i++ {
		s.Query("INSERT INTO exp.t (p, k, version) VALUES (?, '', 0) IF NOT EXISTS", fmt.Sprint("p", i)).MapScanCAS(map[string]any{})
	}
	start := time.Now()
	var mu sync.Mutex
	var oks []time.Duration
	fails := 0
	var wg sync.WaitGroup
	for w := 0; w < *workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			r := rand.New(rand.NewSource(int64(w)))
			for time.Since(start) < *dur {
				p := fmt.Sprint("p", r.Intn(*parts))
				var ver int64
				t0 := time.Now()
				err := s.Query("SELECT version FROM exp.t WHERE p = ? AND k = ''", p).Scan(&ver)
				if d := time.Since(t0); d > 700*time.Millisecond {
					fmt.Fprintf(os.Stderr, "slow read %.2fs from %.2fs err=%v\n", d.Seconds(), t0.Sub(start).Seconds(), err)
				}
				t0 = time.Now()
				if err == nil {
					b := s.Batch(gocql.UnloggedBatch)
					b.Query("UPDATE exp.t SET version = ? WHERE p = ? AND k = '' IF version = ?", ver+1, p, ver)
					b.Query("INSERT INTO exp.t (p, k, v) VALUES (?, ?, ?)", p, fmt.Sprint("k", r.Intn(250)), make([]byte, 100))
					var applied bool
					applied, iter, e := b.MapExecCAS(map[string]any{})
					if iter != nil {
						iter.Close()
					}
					err = e
					if d := time.Since(t0); d > 700*time.Millisecond {
						fmt.Fprintf(os.Stderr, "slow cas %.2fs from %.2fs applied=%v err=%v\n", d.Seconds(), t0.Sub(start).Seconds(), applied, err)
					}
					if err == nil && !applied {
						continue // conflict: retry, not a success
					}
				}
				mu.Lock()
				if err == nil {
					oks = append(oks, time.Since(start))
				} else {
					fails++
				}
				mu.Unlock()
			}
		}(w)
	}
	if *dir != "" {
		st, err := cluster.Load(*dir)
		if err != nil {
			panic(err)
		}
		for k := 1; k <= 2; k++ {
			time.Sleep(time.Until(start.Add(time.Duration(k) * *killAt)))
			st.Kill(2)
			fmt.Fprintln(os.Stderr, "killed m3 at", time.Since(start))
			time.Sleep(5 * time.Second)
			if err := st.Restart(2); err != nil {
				fmt.Fprintln(os.Stderr, "restart:", err)
			}
			fmt.Fprintln(os.Stderr, "m3 back at", time.Since(start))
		}
		st.Save(*dir)
	}
	if *killPid > 0 {
		time.Sleep(*killAt)
		exec.Command("kill", "-9", fmt.Sprint(*killPid)).Run()
		fmt.Fprintln(os.Stderr, "killed", *killPid, "at", time.Since(start))
	}
	wg.Wait()
	var gap, gapAt time.Duration
	prev := *killAt
	before, after := 0, 0
	for _, t := range oks {
		if t < *killAt {
			before++
			continue
		}
		after++
		if t-prev > gap {
			gap, gapAt = t-prev, prev
		}
		prev = t
	}
	for i := 1; i < len(oks); i++ {
		if oks[i]-oks[i-1] > 700*time.Millisecond {
			fmt.Printf("gap %.2fs from %.2fs\n", (oks[i] - oks[i-1]).Seconds(), oks[i-1].Seconds())
		}
	}
	fmt.Printf("parts=%d ok=%d fails=%d rate before %.1f/s after %.1f/s maxgap after kill %.2fs (from %.1fs)\n",
		*parts, len(oks), fails, float64(before)/killAt.Seconds(), float64(after)/(*dur-*killAt).Seconds(), gap.Seconds(), gapAt.Seconds())
}
