package redis

import (
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"anykv/internal/engine/memstore"
	"anykv/internal/kv"
)

// FuzzSession feeds arbitrary command streams (inline or multibulk) to a connection handler over a pipe. A
// panic anywhere in command handling fails the fuzz run; the session must end when the client hangs up.
func FuzzSession(f *testing.F) {
	seeds := []string{
		"SET k abcdef\r\nSETRANGE k 9223372036854775807 x\r\nGETRANGE k -100 100\r\n",
		"COMMAND GETKEYS keys a\r\nCOMMAND GETKEYS mset a 1 b\r\nCOMMAND INFO get nosuch\r\n",
		"MULTI\r\nSELECT 3\r\nMSETNX a 1 a 2\r\nINCRBYFLOAT f 0x1p3\r\nEXEC\r\n",
		"WATCH a b\r\nMULTI\r\nSET a 1\r\nDISCARD\r\nEXEC\r\n",
		"SCAN 0 MATCH *a*[ COUNT 1\r\nKEYS [^\r\nKEYS \\\r\nSCAN 18446744073709551615\r\n",
		"EXPIRE a 9223372036854775807\r\nPEXPIREAT a -9223372036854775808 XX LT\r\nSETEX a -1 v\r\n",
		"*3\r\n$3\r\nSET\r\n$1\r\na\r\n$1\r\n1\r\n*2\r\n$4\r\nINCR\r\n$1\r\na\r\n",
		"HELLO 3 AUTH default x SETNAME n\r\nCLIENT LIST\r\nINFO\r\nCONFIG GET *\r\nRESET\r\n",
		"GETEX a PXAT 1 EX 1\r\nSET a b EXAT 99999999999999999\r\nCOPY a a DB 0\r\nRENAMENX a a\r\n",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		store := kv.New(memstore.New(), kv.Options{SweepInterval: -1, Limits: kv.Limits{MaxKey: 512, MaxValue: 4096, MaxBatch: 64}})
		defer store.Close()
		h := New(store, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		client, srv := net.Pipe()
		done := make(chan struct{})
		go func() {
			defer close(done)
			h.ServeConn(ctx, srv)
			srv.Close()
		}()
		read := make(chan struct{})
		go func() { io.Copy(io.Discard, client); close(read) }()
		client.SetDeadline(time.Now().Add(10 * time.Second))
		in := strings.ReplaceAll(strings.ToUpper(string(data)), "DEBUG", "ECHO") // no sleeping
		client.Write([]byte(in + "\r\nPING\r\n"))
		client.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("session did not end after the client hung up")
		}
		<-read
	})
}
