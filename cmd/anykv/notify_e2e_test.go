package main

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"anykv/internal/servertest"
)

// TestKeyspaceNotificationsFlag: --notify-keyspace-events sets the classes at start (CONFIG GET shows them), the
// pebble engine's sweeper sends "expired" for a key whose time ran out, and a bad letter stops serve at once.
func TestKeyspaceNotificationsFlag(t *testing.T) {
	s := servertest.Start(t, servertest.Options{Args: []string{"--notify-keyspace-events", "Ex$"}})
	c := client(t, s.RESP)
	if v, err := c.ConfigGet(ctx, "notify-keyspace-events").Result(); err != nil || v["notify-keyspace-events"] != "$xE" {
		t.Fatalf("CONFIG GET notify-keyspace-events = %v, %v", v, err)
	}
	ps := c.Subscribe(ctx, "__keyevent@0__:set", "__keyevent@0__:expired")
	defer ps.Close()
	for i := 0; i < 2; i++ {
		if _, err := ps.Receive(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Set(ctx, "brief", "v", 50*time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	var got []string
	wait, cancel := context.WithTimeout(ctx, 20*time.Second) // the sweeper runs every 100 ms
	defer cancel()
	for len(got) < 2 {
		m, err := ps.ReceiveMessage(wait)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, strings.TrimPrefix(m.Channel, "__keyevent@0__:")+" "+m.Payload)
	}
	if strings.Join(got, ", ") != "set brief, expired brief" {
		t.Fatalf("events %q, want set then expired", got)
	}

	out, err := exec.Command(servertest.Binary(t), "serve", "--engine", "memory", "--resp", servertest.FreePort(t),
		"--memcache", "", "--http", "", "--notify-keyspace-events", "KEQ").CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "Invalid event class character") {
		t.Fatalf("serve with a bad letter: %v\n%s", err, out)
	}
}
