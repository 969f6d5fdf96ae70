"""The RESP client and the server processes of tests/difffuzz/difffuzz.py."""
import os, shutil, signal, socket, subprocess, time

# ---------------------------------------------------------------- RESP client
class Err(Exception):
    pass

class ErrReply:
    def __init__(self, s): self.s = s
    def __repr__(self): return 'ERR<%s>' % self.s
    def __eq__(self, o): return isinstance(o, ErrReply) and o.s.split(' ')[0] == self.s.split(' ')[0]
    def __hash__(self): return hash(self.s.split(' ')[0])

class Push(list):
    pass

class Conn:
    def __init__(self, port, timeout=10):
        self.port = port
        self.s = socket.create_connection(('127.0.0.1', port), timeout=timeout)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b''

    def close(self):
        try: self.s.close()
        except Exception: pass

    def send(self, args):
        out = [b'*%d\r\n' % len(args)]
        for a in args:
            if isinstance(a, str): a = a.encode()
            elif isinstance(a, int) or isinstance(a, float): a = str(a).encode()
            out.append(b'$%d\r\n%s\r\n' % (len(a), a))
        self.s.sendall(b''.join(out))

    def _fill(self):
        d = self.s.recv(65536)
        if not d:
            raise Err('connection closed')
        self.buf += d

    def _line(self):
        while True:
            i = self.buf.find(b'\r\n')
            if i >= 0:
                l = self.buf[:i]; self.buf = self.buf[i+2:]
                return l
            self._fill()

    def _n(self, n):
        while len(self.buf) < n + 2:
            self._fill()
        d = self.buf[:n]; self.buf = self.buf[n+2:]
        return d

    def read(self):
        l = self._line()
        t, r = l[:1], l[1:]
        if t == b'+': return r.decode('latin1')
        if t == b'-': return ErrReply(r.decode('latin1'))
        if t == b':': return int(r)
        if t == b'$':
            n = int(r)
            if n < 0: return None
            return self._n(n).decode('latin1')
        if t == b'*':
            n = int(r)
            if n < 0: return None
            return [self.read() for _ in range(n)]
        if t == b'_': return None
        if t == b',':
            return ('double', r.decode())
        if t == b'#': return r == b't'
        if t == b'(': return int(r)
        if t == b'=':
            n = int(r); d = self._n(n); return d[4:].decode('latin1')
        if t == b'!':
            n = int(r); return ErrReply(self._n(n).decode('latin1'))
        if t == b'%':
            n = int(r)
            return ('map', [(self.read(), self.read()) for _ in range(n)])
        if t == b'~':
            n = int(r)
            return ('set', [self.read() for _ in range(n)])
        if t == b'>':
            n = int(r)
            return Push([self.read() for _ in range(n)])
        raise Err('bad reply type %r' % l)

    def cmd(self, *args):
        self.send(args)
        return self.read()

# ---------------------------------------------------------------- servers
def free_port():
    s = socket.socket(); s.bind(('127.0.0.1', 0)); p = s.getsockname()[1]; s.close(); return p

def wait_port(port, proc, t=20):
    end = time.time() + t
    while time.time() < end:
        if proc.poll() is not None:
            raise RuntimeError('server exited rc=%s' % proc.returncode)
        try:
            c = Conn(port, timeout=2)
            if c.cmd('PING') == 'PONG':
                c.close(); return
            c.close()
        except OSError:
            pass
        time.sleep(0.05)
    raise RuntimeError('server on %d did not come up' % port)

class AnyKV:
    """anykv serving RESP only from binary, with its directory and log under base."""
    def __init__(self, binary, base, tag, extra=()):
        self.binary = binary
        self.dir = os.path.join(base, 'data-' + tag)
        shutil.rmtree(self.dir, ignore_errors=True)
        self.extra = list(extra)
        self.log = open(os.path.join(base, 'anykv-%s.log' % tag), 'ab')
        self.proc = None
        for attempt in range(5):  # a port free a moment ago may be taken before the server binds it
            self.port = free_port()
            try:
                self.start()
                return
            except RuntimeError:
                self.stop()
                if attempt == 4:
                    raise

    def start(self):
        self.proc = subprocess.Popen([self.binary, 'serve', '--dir', self.dir, '--resp', '127.0.0.1:%d' % self.port,
                                      '--memcache', '', '--http', '', '--log-level', 'warn'] + self.extra,
                                     stdout=self.log, stderr=self.log)
        # 60 s: a restart after SIGKILL flushes the replayed WAL with fsyncs, which took over 20 s on a machine
        # whose disk several fsync-always servers shared (the pebble.Open of a 9 MB directory: 3.4 s alone)
        wait_port(self.port, self.proc, 60)

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL); self.proc.wait()

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL); self.proc.wait()

class Redis:
    """redis-server without persistence, its working directory base."""
    def __init__(self, base):
        for attempt in range(5):  # as AnyKV's
            self.port = free_port()
            self.proc = subprocess.Popen(['redis-server', '--port', str(self.port), '--save', '', '--appendonly', 'no',
                                          '--bind', '127.0.0.1', '--dir', base],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                wait_port(self.port, self.proc)
                return
            except RuntimeError:
                self.stop()
                if attempt == 4:
                    raise

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL); self.proc.wait()
