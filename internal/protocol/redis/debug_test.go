package redis

import "testing"

// TestDebugObjectAndError: DEBUG OBJECT answers Redis's line (what redis-server 7.0 with enable-debug-command
// answers for these keys, but for the address and LRU clock anykv does not have), and DEBUG ERROR answers the
// error it is given (redis-py's tests raise LOADING and READONLY errors with it); both with Redis's errors.
func TestDebugObjectAndError(t *testing.T) {
	rc := startServer(t, Options{}, 0).raw(t)
	rc.expect("+OK\r\n", "SET", "foo", "bar")
	rc.expect("+OK\r\n", "SET", "n", "12345")
	rc.expect(":3\r\n", "RPUSH", "l", "a", "b", "c")
	rc.expect("+Value at:0x0 refcount:1 encoding:embstr serializedlength:4 lru:0 lru_seconds_idle:0\r\n", "DEBUG", "OBJECT", "foo")
	rc.expect("+Value at:0x0 refcount:1 encoding:int serializedlength:3 lru:0 lru_seconds_idle:0\r\n", "debug", "object", "n")
	// redis-server: serializedlength:19 and ql_nodes:1 ql_avg_node:3.00 ql_listpack_max:-2 ql_compressed:0 ql_uncompressed_size:16
	rc.expect("+Value at:0x0 refcount:1 encoding:quicklist serializedlength:19 lru:0 lru_seconds_idle:0\r\n", "DEBUG", "OBJECT", "l")
	rc.expect("-ERR no such key\r\n", "DEBUG", "OBJECT", "nokey")
	rc.expect("-ERR unknown subcommand or wrong number of arguments for 'OBJECT'. Try DEBUG HELP.\r\n", "DEBUG", "OBJECT")
	rc.expect("-ERR unknown subcommand or wrong number of arguments for 'object'. Try DEBUG HELP.\r\n", "DEBUG", "object", "a", "b")
	rc.expect("-LOADING fake message\r\n", "DEBUG", "ERROR", "LOADING fake message")
	rc.expect("-ERR unknown subcommand or wrong number of arguments for 'error'. Try DEBUG HELP.\r\n", "DEBUG", "error")
	rc.expect("-ERR unknown subcommand or wrong number of arguments for 'foo'. Try DEBUG HELP.\r\n", "DEBUG", "foo")
	rc.expect("$1\r\n1\r\n", "ECHO", "1") // the connection goes on
}

// TestDebugInTransactionsAndScripts: in MULTI, DEBUG ERROR and SLEEP run as DEBUG does on its own (redis-py
// queues DEBUG ERROR LOADING in a transaction), DEBUG OBJECT reads in the batch; scripts may not call DEBUG.
func TestDebugInTransactionsAndScripts(t *testing.T) {
	rc := startServer(t, Options{}, 0).raw(t)
	rc.expect("+OK\r\n", "SET", "foo", "bar")
	rc.expect("+OK\r\n", "MULTI")
	rc.expect("+QUEUED\r\n", "DEBUG", "ERROR", "LOADING fake message")
	rc.expect("+QUEUED\r\n", "DEBUG", "OBJECT", "foo")
	rc.expect("+QUEUED\r\n", "DEBUG", "SLEEP", "0")
	rc.expect("*3\r\n-LOADING fake message\r\n+Value at:0x0 refcount:1 encoding:embstr serializedlength:4 lru:0 lru_seconds_idle:0\r\n+OK\r\n", "EXEC")
	rc.expect("-ERR This Redis command is not allowed from script script: 612778f1cd6d890e135bb035f7e968f9008cb714, on @user_script:1.\r\n",
		"EVAL", "return redis.call('debug', 'error', 'x')", "0")
}
