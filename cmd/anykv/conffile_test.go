package main

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"anykv/internal/protocol/redis"
	"anykv/internal/servertest"
)

// TestConfigLineQuoting: values read as redis.conf reads them, and every value written by quoteConfigValue
// reads back the same.
func TestConfigLineQuoting(t *testing.T) {
	for line, want := range map[string][]string{
		`requirepass "a b"`:        {"requirepass", "a b"},
		`requirepass ""`:           {"requirepass", ""},
		`x 'it\'s'`:                {"x", "it's"},
		`x "q\"\\\x41\n"`:          {"x", "q\"\\A\n"},
		"  maxclients\t100  # why": {"maxclients", "100"},
		"# comment":                nil,
		"":                         nil,
	} {
		got, err := splitConfigLine(line)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("splitConfigLine(%q) = %q, %v; want %q", line, got, err, want)
		}
	}
	for _, bad := range []string{`x "open`, `x "a"b`} {
		if _, err := splitConfigLine(bad); err == nil {
			t.Errorf("splitConfigLine(%q) accepted", bad)
		}
	}
	for _, v := range []string{"", "plain", "a b", "#x", "q\"\\'\n\r\t\x01\xff"} {
		got, err := splitConfigLine("k " + quoteConfigValue(v))
		if err != nil || len(got) != 2 || got[1] != v {
			t.Errorf("%q written as %s reads back as %q, %v", v, quoteConfigValue(v), got, err)
		}
	}
}

// TestConfigFileFlags: the file sets the serve flags the command line leaves alone (yes/no booleans, Redis's
// memory units, lua-time-limit as busy-reply-threshold); an unknown name is refused with its file and line.
func TestConfigFileFlags(t *testing.T) {
	path := filepath.Join(t.TempDir(), "anykv.conf")
	os.WriteFile(path, []byte("# settings\nmaxclients 100\nfsync interval\nexclusive yes\nmaxmemory-clients 2mb\nlua-time-limit 700\n"), 0o600)
	var c config
	fs := newServeFlags(&c, io.Discard)
	if err := fs.Parse([]string{"--maxclients", "50"}); err != nil {
		t.Fatal(err)
	}
	if err := applyConfigFile(fs, path); err != nil {
		t.Fatal(err)
	}
	if c.maxClients != 50 || c.fsync != "interval" || !c.exclusive || c.maxmemClients != 2<<20 || c.busyThreshold != 700 {
		t.Errorf("maxclients %d fsync %s exclusive %v maxmemory-clients %d busy-reply-threshold %d",
			c.maxClients, c.fsync, c.exclusive, c.maxmemClients, c.busyThreshold)
	}
	os.WriteFile(path, []byte("maxclients 1\n\nnosuchthing 3\n"), 0o600)
	if err := applyConfigFile(newServeFlags(&config{}, io.Discard), path); err == nil ||
		!strings.Contains(err.Error(), "anykv.conf:3: unknown setting \"nosuchthing\"") {
		t.Errorf("an unknown setting: %v", err)
	}
}

// TestConfigRewriteKeepsTheFile: REWRITE keeps comments, blank lines and order, replaces a setting's first line
// and drops its repeats, appends the changed settings the file lacked after Redis's marker, and leaves no
// temporary file behind; the mode of the file stays.
func TestConfigRewriteKeepsTheFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "anykv.conf")
	os.WriteFile(path, []byte("# top comment\nmaxclients 100\n\n# about the slow log\nslowlog-max-len 64\nmaxclients 7\n"), 0o640)
	var c config
	fs := newServeFlags(&c, io.Discard)
	fs.Parse(nil)
	if err := applyConfigFile(fs, path); err != nil {
		t.Fatal(err)
	}
	r := newConfigRewriter(fs, path)
	if err := r.rewrite(map[string]string{"slowlog-max-len": "5", "requirepass": "p w"}); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	want := "# top comment\nmaxclients 7\n\n# about the slow log\nslowlog-max-len 5\n" + rewriteMarker + "\nrequirepass \"p w\"\n"
	if string(got) != want {
		t.Errorf("rewritten file:\n%s\nwant:\n%s", got, want)
	}
	if err := r.rewrite(map[string]string{"slowlog-max-len": "5", "requirepass": "p w"}); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(path); string(again) != want {
		t.Errorf("a second rewrite changed the file:\n%s", again)
	}
	entries, _ := os.ReadDir(dir)
	if st, _ := os.Stat(path); len(entries) != 1 || st.Mode().Perm() != 0o640 {
		t.Errorf("directory %v, mode %v", entries, st.Mode())
	}
}

// TestConfigFileServe: the binary reads --config, CONFIG SET then CONFIG REWRITE writes the change into the file,
// and a restart comes back with it; INFO names the file. An unknown setting stops serve at once with one line.
func TestConfigFileServe(t *testing.T) {
	path := filepath.Join(t.TempDir(), "anykv.conf")
	os.WriteFile(path, []byte("# kept\nslowlog-max-len 64\n"), 0o600)
	s := servertest.Start(t, servertest.Options{Engine: "memory", Args: []string{"--config", path}})
	c := client(t, s.RESP)
	if v := c.ConfigGet(ctx, "slowlog-max-len").Val(); v["slowlog-max-len"] != "64" {
		t.Fatalf("slowlog-max-len from the file: %v", v)
	}
	if err := c.ConfigSet(ctx, "slowlog-max-len", "9").Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Do(ctx, "CONFIG", "SET", "maxmemory-clients", "3mb").Err(); err != nil {
		t.Fatal(err)
	}
	runtime := map[string]string{"acllog-max-len": "7", "tracking-table-max-keys": "99", "latency-tracking": "no",
		"latency-tracking-info-percentiles": "0 50 99.99"}
	for name, v := range runtime {
		if err := c.ConfigSet(ctx, name, v).Err(); err != nil {
			t.Fatal(name, err)
		}
	}
	// Two CONFIG SETs of one class each: REWRITE writes both (the value in force), not the last SET's text.
	for _, v := range []string{"pubsub 5mb 6mb 80", "normal 10mb 0 0"} {
		if err := c.ConfigSet(ctx, "client-output-buffer-limit", v).Err(); err != nil {
			t.Fatal(err)
		}
	}
	runtime["client-output-buffer-limit"] = "normal 10485760 0 0 slave 268435456 67108864 60 pubsub 5242880 6291456 80"
	if err := c.ConfigRewrite(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	if !strings.HasPrefix(string(got), "# kept\nslowlog-max-len 9\n"+rewriteMarker+"\n") ||
		!strings.Contains(string(got), "\nmaxmemory-clients 3145728\n") {
		t.Fatalf("the rewritten file:\n%s", got)
	}
	if info := c.Info(ctx, "server").Val(); !strings.Contains(info, "config_file:"+path) {
		t.Errorf("INFO server does not name the file:\n%s", info)
	}
	s.Kill()
	s.Restart()
	c = client(t, s.RESP)
	v := c.ConfigGet(ctx, "*").Val()
	if v["slowlog-max-len"] != "9" || v["maxmemory-clients"] != "3145728" {
		t.Errorf("after a restart: slowlog-max-len %q maxmemory-clients %q", v["slowlog-max-len"], v["maxmemory-clients"])
	}
	for name, want := range runtime {
		if v[name] != want {
			t.Errorf("after a restart: %s %q, want %q", name, v[name], want)
		}
	}

	os.WriteFile(path, []byte("maxclients 10\nbogus 1\n"), 0o600)
	out, err := exec.Command(servertest.Binary(t), "serve", "--engine", "memory", "--resp", servertest.FreePort(t),
		"--memcache", "", "--http", "", "--config", path).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || strings.Count(strings.TrimSpace(string(out)), "\n") != 0 ||
		!strings.Contains(string(out), `anykv.conf:2: unknown setting "bogus"`) {
		t.Fatalf("serve with an unknown setting: %v\n%s", err, out)
	}
}

// TestEveryRuntimeSettingHasAFlag: CONFIG REWRITE writes each setting CONFIG SET changed under its name, and a
// config file may set only serve flags, so a run-time setting without a flag of its name made the rewritten file
// stop the next start (acllog-max-len and tracking-table-max-keys did: "unknown setting").
func TestEveryRuntimeSettingHasAFlag(t *testing.T) {
	fs := newServeFlags(&config{}, io.Discard)
	for _, name := range redis.RuntimeSettings() {
		if fs.Lookup(name) == nil || notInConfig[name] {
			t.Errorf("CONFIG SET %s has no serve flag: CONFIG REWRITE would write a file serve refuses", name)
		}
	}
}
