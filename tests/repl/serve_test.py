#!/usr/bin/python3
"""`tapestry serve` and `tapestry connect` on 127.0.0.1, one scenario per run.

usage: serve_test.py SCENARIO TAPESTRY_BINARY [MPIRUN]
SCENARIO: wrong_token | two_clients | dropped_client | cancel | garbage | connect_pipe | connect_pty |
          second_server | private_files | lockout | short_token | cancel_c_call | stop_stuck |
          failed_binding
Each scenario starts its own server (port 0, a token file in a temporary HOME), talks to it
through the frame protocol (repl/protocol.hpp) or the real `tapestry connect`, and stops it with
SIGTERM, checking that it exits cleanly. With MPIRUN the server runs on 2 MPI ranks. Every wait is bounded; nothing outlives the test.
"""
import atexit
import os
import random
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

HELLO, AUTH, CHUNK, COMPLETE, OUTPUT, ERROR, RESULT, CANCEL, BYE = range(1, 10)
WAIT = 30.0  # seconds for any one expectation; generous for a loaded CI machine
SKIP = 77
MPIRUN = None  # set: the server runs as `MPIRUN -n 2 tapestry serve` (rank 0 serves)


SERVERS = []  # started here: killed on the way out, whatever happened


def fail(message):
    print("FAIL:", message)
    for server in SERVERS:
        if server.proc.poll() is None:
            print("--- server output\n" + server.output())
    sys.exit(1)


@atexit.register
def kill_servers():
    for server in SERVERS:
        if server.proc.poll() is None:
            server.proc.kill()
            server.proc.wait()


def frame(kind, payload=b""):
    if isinstance(payload, str):
        payload = payload.encode()
    return struct.pack(">IB", len(payload), kind) + payload


class Server:
    def __init__(self, binary, extra_env=None, args=(), token=None, port_file=None):
        launcher = [MPIRUN, "-n", "2"] if MPIRUN else []
        self.dir = tempfile.TemporaryDirectory(prefix="tapestry-serve-")
        self.port_file = port_file or os.path.join(self.dir.name, "port")
        self.token_file = os.path.join(self.dir.name, "token")
        self.env = dict(os.environ, HOME=self.dir.name, TAPESTRY_HISTORY="")
        self.env.pop("TAPESTRY_TOKEN", None)
        if MPIRUN:
            # On SIGTERM mpirun forwards it to every rank and SIGKILLs them 1 s later by default;
            # on 2 loaded cores rank 0's orderly stop (cancel the evaluation, close the clients)
            # can take longer than that, which is what made these tests flaky.
            self.env.setdefault("OMPI_MCA_odls_base_sigkill_timeout", "10")
        self.env.update(extra_env or {})
        self.log = open(os.path.join(self.dir.name, "log"), "w+")
        if token is not None:
            self.env["TAPESTRY_TOKEN"] = token
        self.proc = subprocess.Popen(
            launcher + [binary, "serve", "--listen", "127.0.0.1:0", "--port-file", self.port_file,
             "--token-file", self.token_file] + list(args),
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT, env=self.env)
        SERVERS.append(self)
        deadline = time.time() + WAIT
        while not os.path.exists(self.port_file):
            if self.proc.poll() is not None or time.time() > deadline:
                fail("the server did not start:\n" + self.output())
            time.sleep(0.05)
        self.port = int(open(self.port_file).read())
        if token is not None:
            self.token = token
            return
        self.token = open(self.token_file).read().strip()
        mode = os.stat(self.token_file).st_mode & 0o777
        if mode != 0o600:
            fail(f"token file mode is {oct(mode)}, wanted 0o600")
        if len(self.token) != 64:
            fail(f"token {self.token!r} is not 64 hex digits")

    def output(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def alive(self, what):
        if self.proc.poll() is not None:
            fail(f"the server died ({what}), status {self.proc.returncode}:\n" + self.output())

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=WAIT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            fail("the server did not stop on SIGTERM:\n" + self.output())
        # mpirun passes SIGTERM to every rank and reports the killed workers; rank 0 must still
        # have stopped in order.
        if rc != 0 and not MPIRUN:
            fail(f"the server exited with {rc}:\n" + self.output())
        if "server stopped" not in self.output():
            fail("the server did not stop in order:\n" + self.output())
        if os.path.exists(self.token_file):
            fail("the server left its token file behind")
        if os.path.exists(self.port_file):
            fail("the server left its port file behind")


class Client:
    """A frame-level client, as `tapestry connect` talks."""

    def __init__(self, server, token=None, login=True):
        self.sock = socket.create_connection(("127.0.0.1", server.port), timeout=WAIT)
        self.buf = b""
        if login:
            self.send(AUTH, server.token if token is None else token)

    def send(self, kind, payload=b""):
        self.sock.sendall(frame(kind, payload))

    def frame(self, timeout=WAIT):
        """The next (type, payload), or None when the server closed the connection."""
        deadline = time.time() + timeout
        while True:
            if len(self.buf) >= 5:
                n, kind = struct.unpack(">IB", self.buf[:5])
                if len(self.buf) >= 5 + n:
                    payload, self.buf = self.buf[5:5 + n], self.buf[5 + n:]
                    return kind, payload
            left = deadline - time.time()
            if left <= 0:
                fail("no frame from the server in time")
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(65536)
            except (ConnectionResetError, socket.timeout) as e:
                if isinstance(e, socket.timeout):
                    fail("no frame from the server in time")
                return None
            if not data:
                return None
            self.buf += data

    def hello(self):
        got = self.frame()
        if got is None or got[0] != HELLO:
            fail(f"wanted a hello frame, got {got!r}")
        return got[1].decode()

    def run(self, chunk):
        """Sends a chunk; returns (stdout, stderr, error or None, incomplete)."""
        self.send(CHUNK, chunk)
        out, err = b"", b""
        while True:
            got = self.frame()
            if got is None:
                fail(f"the server closed the connection while running {chunk!r}")
            kind, payload = got
            if kind == OUTPUT:
                if payload[:1] == b"\x01":
                    out += payload[1:]
                else:
                    err += payload[1:]
            elif kind == ERROR:
                return out.decode(), err.decode(), payload.decode(), False
            elif kind == RESULT:
                return out.decode(), err.decode(), None, payload[:1] == b"\x01"

    def closed_by_server(self, timeout=WAIT):
        """True when the server closes the connection (after any frames it sends)."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.frame(deadline - time.time()) is None:
                return True
        return False

    def close(self):
        self.sock.close()


def expect_run(client, chunk, stdout=None, has=None):
    out, err, error, _ = client.run(chunk)
    if error is not None:
        fail(f"{chunk!r} failed: {error}\n{err}")
    if stdout is not None and out != stdout:
        fail(f"{chunk!r} printed {out!r}, wanted {stdout!r}")
    if has is not None and has not in out:
        fail(f"{chunk!r} printed {out!r}, wanted it to contain {has!r}")
    return out


def wrong_token(binary):
    s = Server(binary)
    bad = Client(s, token="0" * 64)
    got = bad.frame()
    if got is None or got[0] != ERROR or b"authentication failed" not in got[1]:
        fail(f"a wrong token got {got!r}")
    if not bad.closed_by_server():
        fail("the connection stayed open after a wrong token")
    empty = Client(s, token="")
    if empty.frame()[0] != ERROR or not empty.closed_by_server():
        fail("an empty token was not refused")
    early = Client(s, login=False)
    early.send(CHUNK, "os.exit(3)")  # code before logging in
    got = early.frame()
    if got is None or got[0] != ERROR or not early.closed_by_server():
        fail(f"a chunk before logging in got {got!r}")
    s.alive("after wrong tokens")
    good = Client(s)
    good.hello()
    expect_run(good, "1 + 1", "2\n")
    good.send(BYE)
    if "failed login from 127.0.0.1" not in s.output():
        fail("the failed login is not in the server's log:\n" + s.output())
    s.stop()


def two_clients(binary):
    s = Server(binary)
    a, b = Client(s), Client(s)
    prompt = a.hello().split("\n")[0]
    b.hello()
    if prompt != ("tapestry[2 ranks]> " if MPIRUN else "tapestry> "):
        fail(f"the hello frame's prompt is {prompt!r}")
    expect_run(a, "tp.env.x = tp.ones{4} * 3", "")
    expect_run(a, "print('only for a')", "only for a\n")
    expect_run(b, "tp.env.x:sum()", "12.0\n")  # b sees what a bound, and not a's output
    expect_run(b, "shared = 5", "")
    expect_run(a, "shared + 1", "6\n")
    expect_run(a, "io.write('w', 1, '\\n'); io.stderr:write('to stderr\\n')", "w1\n")
    out, err, error, _ = b.run("error('oops')")
    if error is None or "stdin:1: oops" not in error or "stack traceback" not in error:
        fail(f"an error came back as {error!r}")
    _, _, _, incomplete = a.run("for i = 1, 2 do")
    if not incomplete:
        fail("an unfinished chunk was not answered 'incomplete'")
    expect_run(a, "for i = 1, 2 do\n  print(i)\nend", "1\n2\n")
    expect_run(b, ":tensors", has="x ")
    b.send(COMPLETE, "tp.ze")
    kind, words = b.frame()
    if kind != COMPLETE or b"tp.zeros" not in words.split(b"\n"):
        fail(f"completing 'tp.ze' gave {words!r}")
    a.send(BYE)
    b.close()
    s.stop()


LONG = "local a = tp.ones{700, 700}\nfor i = 1, 100000 do (a:matmul(a) + i):sum():item() end"


def dropped_client(binary):
    s = Server(binary)
    a = Client(s)
    a.hello()
    expect_run(a, "tp.env.kept = tp.ones{2} * 7", "")
    a.send(CHUNK, LONG)
    time.sleep(1.0)
    a.close()  # gone in the middle of the evaluation
    b = Client(s)
    b.hello()
    start = time.time()
    expect_run(b, "tp.env.kept:sum()", "14.0\n")
    if time.time() - start > 20:
        fail("the dropped client's evaluation was not cancelled")
    s.alive("after a dropped client")
    if "left" not in s.output():
        fail("the server's log does not say the client left:\n" + s.output())
    b.send(BYE)
    s.stop()


def cancel(binary):
    s = Server(binary)
    a, b = Client(s), Client(s)
    a.hello()
    b.hello()
    a.send(CHUNK, LONG)
    b.send(CHUNK, "'queued behind a'")  # waits for a's chunk, then runs
    time.sleep(1.0)
    a.send(CANCEL)
    kind, payload = a.frame()
    while kind == OUTPUT:
        kind, payload = a.frame()
    if kind != ERROR or not (b"cancel" in payload or b"interrupted" in payload):
        fail(f"a cancelled chunk ended with {kind} {payload!r}")
    expect_run(a, "'after cancel'", "after cancel\n")
    kind, payload = b.frame()
    if kind != OUTPUT or payload[1:] != b"queued behind a\n":
        fail(f"b's queued chunk gave {kind} {payload!r}")
    a.send(CHUNK, "while true do end")  # pure Lua: the hook stops it
    time.sleep(0.5)
    a.send(CANCEL)
    kind, payload = a.frame()
    if kind != ERROR or b"interrupted" not in payload:
        fail(f"cancelling a Lua loop ended with {kind} {payload!r}")
    s.stop()


def garbage(binary):
    s = Server(binary)
    rng = random.Random(7)
    watcher = Client(s)  # logged in all along: must be unharmed
    watcher.hello()
    cases = [
        ("random bytes", bytes(rng.randrange(256) for _ in range(4096))),
        ("more random bytes", bytes(rng.randrange(256) for _ in range(100))),
        ("an oversized length", struct.pack(">IB", 0xFFFFFFFF, CHUNK)),
        ("a length over 16 MiB", struct.pack(">IB", (16 << 20) + 1, AUTH) + b"x" * 1000),
        ("an unknown type", struct.pack(">IB", 3, 200) + b"abc"),
        ("a zero type", struct.pack(">IB", 0, 0)),
    ]
    for what, data in cases:
        c = Client(s, login=False)
        try:
            c.sock.sendall(data)
        except OSError:
            pass  # already closed by the server: fine
        if not c.closed_by_server():
            fail(f"{what}: the connection stayed open")
        s.alive(what)
    # A truncated frame: a header that promises more than comes, then the client goes.
    t = Client(s, login=False)
    t.sock.sendall(struct.pack(">IB", 100, AUTH) + b"short")
    t.close()
    # A logged-in client that turns hostile is dropped alone.
    h = Client(s)
    h.hello()
    h.sock.sendall(struct.pack(">IB", 0x7FFFFFFF, CHUNK))
    if not h.closed_by_server():
        fail("an oversized frame after logging in left the connection open")
    h2 = Client(s)
    h2.hello()
    h2.send(RESULT, b"\x00")  # a server-only frame from a client
    if not h2.closed_by_server():
        fail("a server-only frame left the connection open")
    s.alive("after garbage")
    expect_run(watcher, "1 + 2", "3\n")
    fresh = Client(s)
    fresh.hello()
    expect_run(fresh, "'still serving'", "still serving\n")
    if "malformed frame" not in s.output():
        fail("malformed frames are not logged:\n" + s.output())
    s.stop()


def connect_pipe(binary):
    s = Server(binary)
    env = dict(s.env)
    cmd = [binary, "connect", f"127.0.0.1:{s.port}", "--token-file", s.token_file]
    r = subprocess.run(cmd, input=b"x = 6\nprint(x * 7)\nfor i = 1, 2 do\nprint(i)\nend\nx\n",
                       capture_output=True, env=env, timeout=WAIT)
    if r.returncode != 0 or r.stdout != b"42\n1\n2\n6\n":
        fail(f"connect printed {r.stdout!r} (status {r.returncode}), stderr {r.stderr!r}")
    r = subprocess.run(cmd, input=b"error('bad')\nprint(x)\n", capture_output=True, env=env,
                       timeout=WAIT)
    if r.returncode != 1 or r.stdout != b"6\n" or b"stdin:1: bad" not in r.stderr:
        fail(f"an error through connect: {r.returncode} {r.stdout!r} {r.stderr!r}")
    r = subprocess.run([binary, "connect", f"127.0.0.1:{s.port}", "--token", "nope"],
                       input=b"print(1)\n", capture_output=True, env=env, timeout=WAIT)
    if r.returncode != 1 or b"authentication failed" not in r.stderr:
        fail(f"connect with a wrong token: {r.returncode} {r.stdout!r} {r.stderr!r}")
    s.stop()
    r = subprocess.run([binary, "connect", f"127.0.0.1:{s.port}"], input=b"1\n",
                       capture_output=True, env=dict(env, TAPESTRY_TOKEN=s.token), timeout=WAIT)
    if r.returncode != 1 or b"cannot connect" not in r.stderr:
        fail(f"connect to a stopped server: {r.returncode} {r.stderr!r}")


def connect_pty(binary):
    import pty
    s = Server(binary)
    try:
        pid, fd = pty.fork()
    except OSError as e:
        print("skipped: no pseudo-terminal:", e)
        s.stop()
        sys.exit(SKIP)
    if pid == 0:
        os.execve(binary, [binary, "connect", f"127.0.0.1:{s.port}", "--token-file", s.token_file],
                  s.env)

    @atexit.register
    def kill_client():
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
    buf = b""

    def expect(pattern, what):
        nonlocal buf
        deadline = time.time() + WAIT
        while pattern.encode() not in buf:
            if time.time() > deadline:
                os.kill(pid, signal.SIGKILL)
                fail(f"{what}: no {pattern!r} in {buf.decode(errors='replace')!r}")
            if select.select([fd], [], [], 0.1)[0]:
                try:
                    data = os.read(fd, 4096)
                except OSError:
                    data = b""
                if not data:
                    fail(f"{what}: connect ended; output {buf.decode(errors='replace')!r}")
                buf += data
        buf = buf[buf.index(pattern.encode()) + len(pattern):]

    def prompt(what, text="tapestry> "):
        import termios
        expect(text, what)
        deadline = time.time() + WAIT
        while termios.tcgetattr(fd)[3] & termios.ICANON:  # libedit has the terminal now
            if time.time() > deadline:
                fail(f"{what}: the terminal never left canonical mode")
            time.sleep(0.01)

    expect("served by pid", "banner")
    prompt("first prompt")
    os.write(fd, b"y = 1 +\r")
    prompt("continuation", "      ... ")
    os.write(fd, b"41\r")
    prompt("after the chunk")
    os.write(fd, b"print('y is', y)\r")
    expect("y is\t42", "output of a remote chunk")
    prompt("after print")
    os.write(fd, b"tp.zer\t")  # the server completes it to tp.zeros (redrawn with cursor moves)
    time.sleep(0.5)
    os.write(fd, b"({5}):numel()\r")
    expect("\r\n5\r\n", "a call completed by the server")
    prompt("after completion")
    os.write(fd, LONG.replace("\n", " ").encode() + b"\r")
    time.sleep(1.5)
    os.write(fd, b"\x03")  # Ctrl-C: cancel on the server
    # The loop is many short evaluations: Ctrl-C lands in one ("evaluation cancelled
    # (interrupted)") or in the Lua between them ("interrupted!"); either stops the chunk.
    expect("interrupted", "Ctrl-C during a remote evaluation")
    prompt("after cancel")
    os.write(fd, b"y\r")
    expect("42", "the session after cancel")
    prompt("before Ctrl-D")
    os.write(fd, b"\x04")
    deadline = time.time() + WAIT
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.time() > deadline:
            os.kill(pid, signal.SIGKILL)
            fail("connect did not leave on Ctrl-D")
        try:
            if select.select([fd], [], [], 0.1)[0]:
                os.read(fd, 4096)
        except OSError:
            pass
    if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
        fail(f"connect ended with status {status}")
    s.alive("after connect left")
    s.stop()


def run_as_nobody():
    """A preexec_fn: the child runs as another user (root only)."""
    os.setgroups([])
    os.setgid(65534)
    os.setuid(65534)


def second_server(binary):
    """A second server that cannot bind leaves the running one's token file and clients alone."""
    s = Server(binary)
    r = subprocess.run([binary, "serve", "--listen", f"127.0.0.1:{s.port}", "--token-file", s.token_file,
                        "--port-file", s.port_file + "2"], env=s.env, capture_output=True, timeout=WAIT)
    if r.returncode != 1 or b"cannot listen" not in r.stderr:
        fail(f"a second server on a used port: {r.returncode} {r.stderr!r}")
    if open(s.token_file).read().strip() != s.token:
        fail("the second server replaced the running server's token file")
    if os.path.exists(s.port_file + "2"):
        fail("the second server wrote its port file")
    c = Client(s)
    c.hello()
    expect_run(c, "1 + 1", "2\n")
    c.send(BYE)
    s.stop()


def private_files(binary):
    """Token and port files are never written through a link or into another user's file."""
    d = tempfile.TemporaryDirectory(prefix="tapestry-files-")
    victim = os.path.join(d.name, "victim")
    open(victim, "w").write("precious\n")
    # A link planted where the port file goes, and where its temporary used to go.
    s_dir = tempfile.TemporaryDirectory(prefix="tapestry-serve-")
    port_file = os.path.join(s_dir.name, "port")
    os.symlink(victim, port_file + ".tmp")
    os.symlink(victim, port_file)
    env = dict(os.environ, HOME=s_dir.name, TAPESTRY_HISTORY="")
    env.pop("TAPESTRY_TOKEN", None)
    proc = subprocess.Popen([binary, "serve", "--listen", "127.0.0.1:0", "--port-file", port_file],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    out = proc.communicate(timeout=WAIT)[0]
    if proc.returncode != 1 or b"not a regular file" not in out:
        fail(f"a link at the port file: status {proc.returncode}, {out!r}")
    if open(victim).read() != "precious\n":
        fail("the port file's link target was overwritten")
    os.unlink(port_file)
    s = Server(binary, port_file=port_file)  # the link at PATH.tmp stays: never used
    if open(victim).read() != "precious\n" or os.path.islink(port_file):
        fail("the port file went through a link")
    s.stop()
    if os.geteuid() != 0:
        print("(not root: the file-owned-by-another-user checks are skipped)")
        return
    # A token file another user made in advance: refused, and it stays theirs and unread.
    theirs = os.path.join(d.name, "token")
    open(theirs, "w").close()
    os.chown(theirs, 65534, 65534)
    os.chmod(theirs, 0o666)
    r = subprocess.run([binary, "serve", "--listen", "127.0.0.1:0", "--token-file", theirs],
                       env=env, capture_output=True, timeout=WAIT)
    if r.returncode != 1 or b"belongs to another user" not in r.stderr:
        fail(f"a token file owned by another user: {r.returncode} {r.stderr!r}")
    if os.path.getsize(theirs) != 0:
        fail("the token was written into another user's file")


def lockout(binary):
    """No one without the token can keep the owner out: not by failing logins, not by idle
    connections, not by a huge Auth frame."""
    s = Server(binary)
    bad = []
    for i in range(15):  # past the per-source limit of failed logins
        c = Client(s, token="x" * 64)
        got = c.frame()
        if got is None or got[0] != ERROR:
            fail(f"wrong token {i} got {got!r}")
        c.close()
    start = time.time()
    good = Client(s)
    good.hello()
    if time.time() - start > 2:
        fail(f"the owner's login waited {time.time() - start:.1f} s after failed logins")
    expect_run(good, "1 + 1", "2\n")
    # An Auth frame larger than a few hundred bytes is refused at its header.
    big = Client(s, login=False)
    big.sock.sendall(struct.pack(">IB", 100000, AUTH) + b"x" * 1000)
    if not big.closed_by_server(timeout=5):
        fail("a 100 kB Auth frame was not refused")
    if "malformed frame" not in s.output():
        fail("the oversized Auth frame is not logged:\n" + s.output())
    if os.geteuid() == 0:
        # Another local user opens 64 idle connections: only a few are kept, and the owner
        # still logs in at once.
        holder = subprocess.Popen(
            ["/usr/bin/python3", "-c", f"""
import socket, time
socks = []
for i in range(64):
    try:
        socks.append(socket.create_connection(("127.0.0.1", {s.port}), timeout=5))
    except OSError:
        pass
print("open", flush=True)
time.sleep(30)
"""], stdout=subprocess.PIPE, preexec_fn=run_as_nobody)
        holder.stdout.readline()
        time.sleep(0.5)
        start = time.time()
        owner = Client(s)
        owner.hello()
        if time.time() - start > 2:
            fail("idle connections of another user delayed the owner's login")
        expect_run(owner, "'in'", "in\n")
        if "waiting to log in from there" not in s.output():
            fail("the idle connections were not capped per source:\n" + s.output())
        holder.kill()
        holder.wait()
        owner.send(BYE)
    good.send(BYE)
    s.stop()


def short_token(binary):
    s = Server(binary, token="abc")
    c = Client(s)
    c.hello()
    expect_run(c, "1", "1\n")
    c.send(BYE)
    if "warning: the token has 3 characters" not in s.output():
        fail("no warning for a 3-character token:\n" + s.output())
    s.stop()


def cancelled(client, what, within=10):
    client.send(CANCEL)
    start = time.time()
    kind, payload = client.frame()
    while kind == OUTPUT:
        kind, payload = client.frame()
    if kind != ERROR or b"interrupted" not in payload:
        fail(f"cancelling {what} ended with {kind} {payload!r}")
    if time.time() - start > within:
        fail(f"cancelling {what} took {time.time() - start:.1f} s")


def cancel_c_call(binary):
    """Ctrl-C stops a long C call (a backtracking pattern), a chunk that catches the error and
    goes on, and cannot be switched off with debug.sethook."""
    s = Server(binary)
    a, b = Client(s), Client(s)
    a.hello()
    b.hello()
    a.send(CHUNK, "return string.rep('a', 3000):find('.-.-b')")
    b.send(CHUNK, "'b after a'")
    time.sleep(1.0)
    cancelled(a, "a long string.find")
    kind, payload = b.frame()
    if kind != OUTPUT or payload[1:] != b"b after a\n":
        fail(f"b's chunk behind the stuck one gave {kind} {payload!r}")
    for chunk in ["return (string.rep('a', 3000):gsub('.-.-b', ''))",
                  "return (string.rep('a', 3000):gsub('.-.-b', function() end))",
                  "for x in string.rep('a', 3000):gmatch('.-.-b') do end",
                  "return string.rep('a', 3000):match('(.-)(.-)b')"]:
        a.send(CHUNK, chunk)
        time.sleep(0.5)
        cancelled(a, chunk)
    expect_run(a, "('x'):rep(3):find('x+')", "1\t3\n")  # small calls as before
    expect_run(a, "string.match('key = value', '(%w+) = (%w+)')", "key\tvalue\n")
    a.send(CHUNK, "while true do pcall(function() while true do end end) end")
    time.sleep(0.5)
    cancelled(a, "a loop that catches the interruption")
    out, err, error, _ = a.run("debug.sethook()")
    if error is None or "debug.sethook is not available" not in error:
        fail(f"debug.sethook under serve gave {error!r}")
    expect_run(a, "'still served'", "still served\n")
    a.send(BYE)
    b.send(BYE)
    s.stop()


def stop_stuck(binary):
    """SIGTERM ends the server promptly, and removes its files, even while a chunk is stuck in a
    C call nothing interrupts."""
    s = Server(binary)
    a = Client(s)
    a.hello()
    a.send(CHUNK, "os.execute('sleep 20')")  # a C call nothing interrupts
    time.sleep(1.0)
    start = time.time()
    s.proc.send_signal(signal.SIGTERM)
    try:
        s.proc.wait(timeout=WAIT)
    except subprocess.TimeoutExpired:
        fail("the server did not stop on SIGTERM with a stuck chunk")
    if time.time() - start > 10:
        fail(f"stopping took {time.time() - start:.1f} s")
    if os.path.exists(s.token_file) or os.path.exists(s.port_file):
        fail("the server left its files behind")
    if "did not stop" not in s.output():
        fail("the forced stop is not logged:\n" + s.output())


def failed_binding(binary):
    """A binding that cannot be computed fails no other client's chunk; its author is told."""
    s = Server(binary, extra_env={"TAPESTRY_MEMORY_PER_RANK": "64M"})
    a, b = Client(s), Client(s)
    a.hello()
    b.hello()
    expect_run(a, "tp.env.big = tp.ones{10000, 10000} * 2", "")  # 400 MB: past the budget
    expect_run(b, "tp.ones{3}:sum()", "3.0\n")
    expect_run(b, "tp.env.big == nil", "true\n")
    out, err, error, _ = a.run("1 + 1")
    told = "computing tp.env.big" in err and ("out of memory" in err or "memory-per-rank" in err)
    if error is not None or out != "2\n" or not told:
        fail(f"the author was not told: {out!r} {err!r} {error!r}")
    # The author's own observation reports its own failed binding as its error.
    expect_run(a, "tp.env.big = tp.ones{10000, 10000} * 2", "")
    out, err, error, _ = a.run("tp.ones{2}:sum()")  # printing fails: the message is on stderr
    if error is None or "computing tp.env.big" not in error + err:
        fail(f"the author's own observation: {error!r} {err!r}")
    a.send(BYE)
    b.send(BYE)
    s.stop()


def main():
    global MPIRUN
    if len(sys.argv) not in (3, 4):
        print(__doc__)
        sys.exit(2)
    scenario, binary = sys.argv[1], sys.argv[2]
    MPIRUN = sys.argv[3] if len(sys.argv) == 4 else None
    globals()[scenario](binary)
    print("ok")


if __name__ == "__main__":
    main()
