package redis

import (
	"runtime"
	"strconv"
	"strings"
	"sync"
	"weak"

	lua "github.com/yuin/gopher-lua"
)

// PUBLISH and SPUBLISH from a script. A script runs inside the engine's batch, so its messages wait there with
// its keyspace events (keyEvent) and go out in the order it sent them once the batch is durable, before its reply:
// a subscriber never hears of a write that a crash could still take back (Bull's scripts publish the job they
// just queued). The count a script's PUBLISH returns is of the subscribers at the moment of the call.
//
// The script knows only its call's arguments; one of them numbers the handler that runs it (scriptHosts), whose
// brokers the count is taken from.

// scriptHosts maps a handler's number to the handler, held weakly: a handler that is dropped (tests make many)
// leaves the map when it is collected.
var scriptHosts struct {
	mu   sync.Mutex
	next int64
	m    map[int64]weak.Pointer[Handler]
}

// registerScriptHost numbers h for the scripts it runs.
func registerScriptHost(h *Handler) {
	scriptHosts.mu.Lock()
	defer scriptHosts.mu.Unlock()
	if scriptHosts.m == nil {
		scriptHosts.m = map[int64]weak.Pointer[Handler]{}
	}
	scriptHosts.next++
	h.scriptHost = scriptHosts.next
	scriptHosts.m[h.scriptHost] = weak.Make(h)
	runtime.AddCleanup(h, func(id int64) {
		scriptHosts.mu.Lock()
		delete(scriptHosts.m, id)
		scriptHosts.mu.Unlock()
	}, h.scriptHost)
}

// scriptHost returns the handler numbered by arg, nil when there is none (any more), the connection that ran the
// script (the id after a slash, 0: none) and the tracking client that follows after a colon (0: none).
func scriptHost(arg []byte) (_ *Handler, caller, tracker int64) {
	hostArg, _, _ := strings.Cut(string(arg), " ") // the ACL user after a space (scriptACLUser)
	num, client, _ := strings.Cut(hostArg, ":")
	num, callerArg, _ := strings.Cut(num, "/")
	caller, _ = strconv.ParseInt(callerArg, 10, 64)
	tracker, _ = strconv.ParseInt(client, 10, 64)
	id, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		return nil, 0, 0
	}
	scriptHosts.mu.Lock()
	defer scriptHosts.mu.Unlock()
	return scriptHosts.m[id].Value(), caller, tracker
}

// scriptCaller returns host's connection numbered id, nil when there is none. A script runs only while the
// connection that ran it waits for its batch (session.apply), so the script may use its state then.
func scriptCaller(host *Handler, id int64) *session {
	if host == nil || id == 0 {
		return nil
	}
	host.mu.Lock()
	defer host.mu.Unlock()
	return host.sessions[id]
}

// scriptPublish answers a script's PUBLISH or SPUBLISH (args: the command, the channel, the message) and keeps the
// message in *out for the handler to send once the batch is durable.
func scriptPublish(L *lua.LState, host *Handler, shard bool, args [][]byte, out *[]keyEvent) lua.LValue {
	n := 0
	if host != nil {
		b := host.broker
		if shard {
			b = host.shards
		}
		n = b.Receivers(string(args[1]))
	}
	*out = append(*out, keyEvent{publish: true, shard: shard, event: string(args[1]), key: append([]byte(nil), args[2]...)})
	return lua.LNumber(n)
}
