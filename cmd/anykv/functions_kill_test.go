package main

import (
	"testing"

	"anykv/internal/servertest"
)

// TestFunctionsSurviveKill: a library loaded with FUNCTION LOAD is data: after a SIGKILL and a restart of the
// real binary, FCALL finds its functions, and the writes an acknowledged FCALL made are there; FLUSHALL keeps the
// library, and FUNCTION FLUSH removes it for good.
func TestFunctionsSurviveKill(t *testing.T) {
	s := servertest.Start(t, servertest.Options{Fsync: "always"})
	c := client(t, s.RESP)
	const lib = "#!lua name=counter\n" +
		"redis.register_function('bump', function(keys, args) redis.call('set', keys[1] .. ':last', args[1]) return redis.call('incr', keys[1]) end)\n" +
		"redis.register_function{function_name='peek', callback=function(keys) return redis.call('get', keys[1]) end, flags={'no-writes'}}"
	if name, err := c.FunctionLoad(ctx, lib).Result(); err != nil || name != "counter" {
		t.Fatalf("FUNCTION LOAD: %q, %v", name, err)
	}
	for i := int64(1); i <= 3; i++ {
		if n, err := c.FCall(ctx, "bump", []string{"n"}, "v").Int64(); err != nil || n != i {
			t.Fatalf("FCALL bump: %d, %v", n, err)
		}
	}
	if err := c.FCallRO(ctx, "bump", []string{"n"}, "v").Err(); err == nil || err.Error() != "ERR Can not execute a script with write flag using *_ro command." {
		t.Fatalf("FCALL_RO of a writing function: %v", err)
	}
	s.Kill()
	s.Restart()
	c = client(t, s.RESP)
	if v, err := c.FCallRO(ctx, "peek", []string{"n"}).Text(); err != nil || v != "3" {
		t.Fatalf("FCALL_RO peek after the restart: %q, %v", v, err)
	}
	if n, err := c.FCall(ctx, "bump", []string{"n"}, "w").Int64(); err != nil || n != 4 {
		t.Fatalf("FCALL bump after the restart: %d, %v", n, err)
	}
	if err := c.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := c.DBSize(ctx).Result(); err != nil || n != 0 {
		t.Fatalf("DBSIZE after FLUSHALL: %d, %v", n, err)
	}
	s.Kill()
	s.Restart()
	c = client(t, s.RESP)
	if n, err := c.FCall(ctx, "bump", []string{"n"}, "v").Int64(); err != nil || n != 1 {
		t.Fatalf("FCALL bump after FLUSHALL and a restart: %d, %v", n, err)
	}
	if err := c.FunctionFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	s.Kill()
	s.Restart()
	c = client(t, s.RESP)
	if err := c.FCall(ctx, "bump", []string{"n"}, "v").Err(); err == nil || err.Error() != "ERR Function not found" {
		t.Fatalf("FCALL after FUNCTION FLUSH and a restart: %v", err)
	}
}
