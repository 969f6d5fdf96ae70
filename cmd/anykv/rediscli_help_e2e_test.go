package main

import (
	"net"
	"os/exec"
	"strings"
	"testing"

	"anykv/internal/servertest"
)

// TestRedisCLIHelp: redis-cli builds its help from COMMAND DOCS, so "help set" shows SET's syntax and group.
func TestRedisCLIHelp(t *testing.T) {
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Fatal("redis-cli not found: install the Debian package redis-tools")
	}
	s := servertest.Start(t, servertest.Options{Engine: "memory"})
	_, port, _ := net.SplitHostPort(s.RESP)
	out, err := exec.Command("redis-cli", "-p", port, "help", "set").CombinedOutput()
	if err != nil {
		t.Fatal(err, string(out))
	}
	for _, want := range []string{"SET", "key value [NX|XX] [GET] [EX seconds|PX milliseconds", "group:", "string"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("redis-cli help set lacks %q:\n%s", want, out)
		}
	}
}
