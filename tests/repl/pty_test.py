#!/usr/bin/python3
"""The interactive shell driven through a pseudo-terminal, as a person would type.

usage: pty_test.py TAPESTRY_BINARY
Checks the banner and prompt, multi-line input with the continuation prompt, an
expression printed alone, Ctrl-C at the prompt, in Lua code and in evaluations, tab
completion (fields, tp, methods, commands, file names, named tensors), history kept
across sessions, and that Ctrl-D leaves with status 0; then on 2 virtual ranks: the
prompt naming the mesh, the layout footer, the progress bar of a long evaluation, and
Ctrl-C cancelling it with tp.env intact.
"""
import os
import pty
import re
import select
import shutil
import sys
import tempfile
import termios
import time

SKIP = 77  # ctest's SKIP_RETURN_CODE for this test
TIMEOUT = 60.0  # seconds per expectation: an MPI start took over 20 s at load 7.5
PROMPT = r"tapestry> "
CONTINUATION = r"      \.\.\. "


def fail(message):
    print("FAIL:", message)
    sys.exit(1)


class Session:
    def __init__(self, binary, env, args=()):
        self.buf = b""
        try:
            self.pid, self.fd = pty.fork()
        except OSError as e:  # a sandbox without /dev/ptmx: nothing to test here
            print("skipped: no pseudo-terminal:", e)
            sys.exit(SKIP)
        if self.pid == 0:
            os.execve(binary, [binary, *args], env)

    def send(self, data):
        os.write(self.fd, data.encode() if isinstance(data, str) else data)

    def expect(self, pattern, what):
        """Waits for a regex in the output since the last match; consumes up to it."""
        regex = re.compile(pattern.encode(), re.S)
        deadline = time.time() + TIMEOUT
        while True:
            m = regex.search(self.buf)
            if m:
                self.buf = self.buf[m.end():]
                return m
            left = deadline - time.time()
            if left <= 0:
                fail(f"{what}: no {pattern!r} in output:\n{self.buf.decode(errors='replace')}")
            ready, _, _ = select.select([self.fd], [], [], min(left, 0.1))
            if ready:
                try:
                    chunk = os.read(self.fd, 4096)
                except OSError:  # the child closed the terminal
                    chunk = b""
                if not chunk:
                    fail(f"{what}: the shell ended; output:\n{self.buf.decode(errors='replace')}")
                self.buf += chunk

    def prompt(self, what, pattern=PROMPT):
        """Waits for a prompt and for libedit to take the terminal out of canonical mode.

        The prompt can show a moment before that; typed then, Ctrl-C and Ctrl-D would be
        the terminal driver's, not the shell's. tcgetattr on the master end reads the
        mode the shell set, so the wait is exact rather than a sleep.
        """
        self.expect(pattern, what)
        deadline = time.time() + TIMEOUT
        while termios.tcgetattr(self.fd)[3] & termios.ICANON:
            if time.time() > deadline:
                fail(f"{what}: the terminal never left canonical mode")
            time.sleep(0.01)

    def line(self, text, what, pattern=PROMPT):
        self.prompt(what, pattern)
        self.send(text)

    def wait_exit(self, what):
        deadline = time.time() + TIMEOUT
        while time.time() < deadline:
            try:  # drain, or the child may block writing
                if select.select([self.fd], [], [], 0.1)[0]:
                    os.read(self.fd, 4096)
            except OSError:
                pass
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                return os.waitstatus_to_exitcode(status)
        fail(f"{what}: the shell did not exit")


def main():
    binary = os.path.abspath(sys.argv[1])
    home = tempfile.mkdtemp(prefix="tapestry-pty-")
    history = os.path.join(home, "history")
    env = dict(os.environ, TERM="xterm", HOME=home, TAPESTRY_HISTORY=history)

    s = Session(binary, env)
    s.expect(r"Type :help", "banner")

    s.line("x = 1 +\r", "first prompt")
    s.line("2\r", "continuation prompt", CONTINUATION)
    s.line("x * 10\r", "prompt after the chunk")
    s.expect(r"\n30\r?\n", "expression printed alone")
    s.line("_ + 1\r", "prompt")
    s.expect(r"\n31\r?\n", "_ holds the last result")

    s.line("junk that is dropped", "prompt before Ctrl-C")
    s.send("\x03")
    s.expect(r"\^C\r?\n", "Ctrl-C at the prompt")
    s.line("'line' .. 'cleared'\r", "prompt after Ctrl-C")
    s.expect(r"\nlinecleared\r?\n", "the line after Ctrl-C")

    s.line("while true do end\r", "prompt")
    time.sleep(0.5)
    s.send("\x03")
    s.expect(r"interrupted!", "Ctrl-C during a running chunk")
    s.line("2 + 3\r", "prompt after the interrupt")
    s.expect(r"\n5\r?\n", "the session goes on after Ctrl-C")
    # The same during tensor evaluations: the hook stops Lua between them, or the engine
    # stops at a kernel boundary ("evaluation cancelled (interrupted)").
    s.line("for i = 1, 100000 do (tp.rand({1000000}, {seed = i}):exp()):sum():item() end\r",
           "prompt")
    time.sleep(0.5)
    s.send("\x03")
    s.expect(r"interrupted", "Ctrl-C during evaluations")
    s.line("tp.ones{2}:sum():item()\r", "prompt after cancelling")
    s.expect(r"\n2\.0\r?\n", "the engine works after Ctrl-C")

    s.line("string.up\t", "prompt")  # completes to string.upper (redrawn with cursor moves)
    time.sleep(0.3)
    s.send("('ab')\r")
    s.expect(r"\nAB\r?\n", "tab completion of a field")
    s.line("tp.zer\t", "prompt")  # a tp function
    time.sleep(0.3)
    s.send("({3}):numel()\r")
    s.expect(r"\n3\r?\n", "tab completion of tp.zeros")
    s.line("t = tp.ones{2, 2}\r", "prompt")
    s.line("t:nume\t", "prompt after t")  # a tensor method, from the registry
    time.sleep(0.3)
    s.send("()\r")
    s.expect(r"\n4\r?\n", "tab completion of a method")

    script = os.path.join(home, "my-setup.lua")  # '-' and '/' are breaks for Lua words
    with open(script, "w") as f:
        f.write('loaded = "from " .. "my-setup"\n')
    s.line(":lo\t", "prompt")  # the command, then a space, then the file name
    time.sleep(0.3)
    s.send(script[:-6] + "\t")
    time.sleep(0.3)
    s.send("\r")
    s.line("loaded\r", "prompt after :load")
    s.expect(r"\nfrom my-setup\r?\n", "tab completion of :load and its file")

    s.line(":nosuch\r", "prompt")
    s.expect(r"unknown command ':nosuch'", "unknown command")
    s.line("'hist' .. 'ory'\r", "prompt")
    s.expect(r"\nhistory\r?\n", "the last chunk")
    s.line("\x04", "prompt before Ctrl-D")
    code = s.wait_exit("Ctrl-D")
    if code != 0:
        fail(f"Ctrl-D: exit status {code}, wanted 0")

    # History is kept across sessions: the second one recalls the first one's last chunk.
    with open(history, "rb") as f:  # libedit writes strvis(3) escapes: "\\040" is a space
        saved = re.sub(rb"\\([0-7]{3})", lambda m: bytes([int(m.group(1), 8)]), f.read())
    if b"x * 10" not in saved:
        fail(f"history file lacks 'x * 10': {saved!r}")
    s = Session(binary, env)
    s.line("\x1b[A", "second session")  # up: the previous session's last chunk
    time.sleep(0.3)
    s.send("\r")
    s.expect(r"\nhistory\r?\n", "history recalled")
    s.line(":quit\r", "prompt")
    code = s.wait_exit(":quit")
    if code != 0:
        fail(f":quit: exit status {code}, wanted 0")

    sharded_session(binary, env)
    shutil.rmtree(home, ignore_errors=True)
    print("ok")


# A chain of big matmuls: one evaluation of many blocks that runs for seconds on 2 ranks.
LONG = ("(function() local y = big for i = 1, 40 do y = y:matmul(big) * 0.001 end "
        "return y:sum() end)()\r")


def sharded_session(binary, env):
    """Two virtual ranks: the prompt names the mesh, a long evaluation shows the progress
    bar (forced: the test's stdout is a pty, but be explicit), and Ctrl-C cancels it
    between blocks while the session and tp.env keep their state."""
    env = dict(env, TAPESTRY_RANKS="2", TAPESTRY_PROGRESS="1")
    ranks_prompt = r"tapestry\[2 ranks\]> "
    s = Session(binary, env)
    s.expect(r"Type :help", "banner (2 ranks)")
    s.line("tp.env.keep = tp.full({4}, 7)\r", "prompt naming the mesh", ranks_prompt)
    s.line("tp.env.ke\t", "prompt", ranks_prompt)  # a named tensor completes
    time.sleep(0.3)
    s.send(":sum():item()\r")
    s.expect(r"\n28\.0\r?\n", "completion of tp.env names")
    s.line("tp.ones{8, 8} * 2\r", "prompt", ranks_prompt)
    s.expect(r"computed as [a-z]+", "the footer notes the layout on 2 ranks")
    s.line("big = tp.rand{2000, 2000}\r", "prompt", ranks_prompt)
    s.line(LONG, "prompt before the long evaluation", ranks_prompt)
    s.expect(r"\] \d+/\d+ blocks .* moved", "the progress bar")
    s.send("\x03")
    s.expect(r"cancelled", "Ctrl-C cancels the evaluation")
    s.line("tp.env.keep:sum():item()\r", "prompt after cancelling", ranks_prompt)
    s.expect(r"\n28\.0\r?\n", "tp.env kept its value after the cancel")
    s.line("(tp.ones{300, 300}:matmul(tp.ones{300, 300})):sum():item()\r", "prompt", ranks_prompt)
    s.expect(r"\n27000000\.0\r?\n", "the engine works on 2 ranks after the cancel")
    s.line(":quit\r", "prompt", ranks_prompt)
    code = s.wait_exit(":quit (2 ranks)")
    if code != 0:
        fail(f":quit on 2 ranks: exit status {code}, wanted 0")


if __name__ == "__main__":
    main()
