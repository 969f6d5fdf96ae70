package loadgen

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// request is one parsed request: a GET or a SET of key (with value).
type request struct {
	get        bool
	key, value string
}

// fakeServer speaks RESP or memcached text over an in-memory map and
// answers through answer, so tests can count requests exactly and inject
// wrong replies.
type fakeServer struct {
	proto  Proto
	answer func(req request, store map[string]string) string
	mu     sync.Mutex
	store  map[string]string
	gets   int
	sets   int
	hits   map[string]int // requests per key
	ln     net.Listener
	wg     sync.WaitGroup
}

// correct answers like a real server.
func correct(p Proto) func(request, map[string]string) string {
	return func(req request, store map[string]string) string {
		switch {
		case !req.get && p == RESP:
			return "+OK\r\n"
		case !req.get:
			return "STORED\r\n"
		}
		v, ok := store[req.key]
		switch {
		case !ok && p == RESP:
			return "$-1\r\n"
		case !ok:
			return "END\r\n"
		case p == RESP:
			return fmt.Sprintf("$%d\r\n%s\r\n", len(v), v)
		}
		return fmt.Sprintf("VALUE %s 0 %d\r\n%s\r\nEND\r\n", req.key, len(v), v)
	}
}

func startFake(t *testing.T, p Proto, answer func(request, map[string]string) string) *fakeServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if answer == nil {
		answer = correct(p)
	}
	f := &fakeServer{proto: p, answer: answer, store: map[string]string{}, hits: map[string]int{}, ln: ln}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			f.wg.Add(1)
			go func() {
				defer f.wg.Done()
				defer c.Close()
				f.serve(c)
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); f.wg.Wait() })
	return f
}

func (f *fakeServer) addr() string { return f.ln.Addr().String() }

func (f *fakeServer) serve(c net.Conn) {
	r, w := bufio.NewReader(c), bufio.NewWriter(c)
	for {
		req, err := f.read(r)
		if err != nil {
			return
		}
		f.mu.Lock()
		reply := f.answer(req, f.store)
		f.hits[req.key]++
		if req.get {
			f.gets++
		} else {
			f.sets++
			f.store[req.key] = req.value
		}
		f.mu.Unlock()
		w.WriteString(reply)
		if r.Buffered() == 0 {
			if w.Flush() != nil {
				return
			}
		}
	}
}

func (f *fakeServer) read(r *bufio.Reader) (request, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return request{}, err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if f.proto == Memcache {
		fs := strings.Fields(line)
		if len(fs) == 2 && fs[0] == "get" {
			return request{get: true, key: fs[1]}, nil
		}
		if len(fs) != 5 || fs[0] != "set" {
			return request{}, fmt.Errorf("bad request %q", line)
		}
		n, _ := strconv.Atoi(fs[4])
		b := make([]byte, n+2)
		_, err := io.ReadFull(r, b)
		return request{key: fs[1], value: string(b[:n])}, err
	}
	n, _ := strconv.Atoi(strings.TrimPrefix(line, "*"))
	args := make([]string, n)
	for i := range args {
		hdr, err := r.ReadString('\n')
		if err != nil {
			return request{}, err
		}
		size, _ := strconv.Atoi(strings.TrimSuffix(hdr[1:], "\r\n"))
		b := make([]byte, size+2)
		if _, err := io.ReadFull(r, b); err != nil {
			return request{}, err
		}
		args[i] = string(b[:size])
	}
	switch {
	case n == 2 && args[0] == "GET":
		return request{get: true, key: args[1]}, nil
	case n == 3 && args[0] == "SET":
		return request{key: args[1], value: args[2]}, nil
	}
	return request{}, fmt.Errorf("bad request %q", args)
}

func (f *fakeServer) counts() (gets, sets, keys int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gets, f.sets, len(f.store)
}
