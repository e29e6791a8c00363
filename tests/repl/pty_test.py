#!/usr/bin/python3
"""The interactive shell driven through a pseudo-terminal, as a person would type.

usage: pty_test.py TAPESTRY_BINARY
Checks the banner and prompt, multi-line input with the continuation prompt, an
expression printed alone, Ctrl-C at the prompt and during a running chunk, tab
completion, history kept across sessions, and that Ctrl-D leaves with status 0.
"""
import os
import pty
import re
import select
import shutil
import sys
import tempfile
import time

SKIP = 77  # ctest's SKIP_RETURN_CODE for this test
TIMEOUT = 20.0  # seconds per expectation; generous for a loaded CI machine


class Session:
    def __init__(self, binary, env):
        self.buf = b""
        try:
            self.pid, self.fd = pty.fork()
        except OSError as e:  # a sandbox without /dev/ptmx: nothing to test here
            print("skipped: no pseudo-terminal:", e)
            sys.exit(SKIP)
        if self.pid == 0:
            os.execve(binary, [binary], env)

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


def fail(message):
    print("FAIL:", message)
    sys.exit(1)


def main():
    binary = os.path.abspath(sys.argv[1])
    home = tempfile.mkdtemp(prefix="tapestry-pty-")
    history = os.path.join(home, "history")
    env = dict(os.environ, TERM="xterm", HOME=home, TAPESTRY_HISTORY=history)

    s = Session(binary, env)
    s.expect(r"Type :help", "banner")
    s.expect(r"tapestry> ", "first prompt")

    s.send("x = 1 +\r")
    s.expect(r"      \.\.\. ", "continuation prompt")
    s.send("2\r")
    s.expect(r"tapestry> ", "prompt after the chunk")
    s.send("x * 10\r")
    s.expect(r"\n30\r?\n", "expression printed alone")
    s.send("_ + 1\r")
    s.expect(r"\n31\r?\n", "_ holds the last result")

    # Ctrl-C and Ctrl-D only mean something to libedit once the prompt is up (typed
    # earlier, the terminal's cooked mode would take them), so wait for it first.
    s.expect(r"tapestry> ", "prompt before Ctrl-C")
    s.send("junk that is dropped")
    s.send("\x03")
    s.expect(r"\^C", "Ctrl-C at the prompt")
    s.send("'line' .. 'cleared'\r")
    s.expect(r"\nlinecleared\r?\n", "the line after Ctrl-C")

    s.send("while true do end\r")
    time.sleep(0.5)
    s.send("\x03")
    s.expect(r"interrupted!", "Ctrl-C during a running chunk")
    s.expect(r"tapestry> ", "prompt after the interrupt")
    s.send("2 + 3\r")
    s.expect(r"\n5\r?\n", "the session goes on after Ctrl-C")

    s.send("string.up\t")  # completes to string.upper (redrawn with cursor moves)
    time.sleep(0.3)
    s.send("('ab')\r")
    s.expect(r"\nAB\r?\n", "tab completion of a field")

    s.send("tp.zer\t")  # a tp function
    time.sleep(0.3)
    s.send("({3}):numel()\r")
    s.expect(r"\n3\r?\n", "tab completion of tp.zeros")
    s.send("t = tp.ones{2, 2}\r")
    s.expect(r"tapestry> ", "prompt after t")
    s.send("t:nume\t")  # a tensor method, from the registry
    time.sleep(0.3)
    s.send("()\r")
    s.expect(r"\n4\r?\n", "tab completion of a method")

    s.send(":nosuch\r")
    s.expect(r"unknown command ':nosuch'", "unknown command")
    s.expect(r"tapestry> ", "prompt before Ctrl-D")
    s.send("\x04")
    code = s.wait_exit("Ctrl-D")
    if code != 0:
        fail(f"Ctrl-D: exit status {code}, wanted 0")

    # History is kept across sessions: the second one recalls the first one's last chunk.
    with open(history, "rb") as f:  # libedit writes strvis(3) escapes: "\\040" is a space
        saved = re.sub(rb"\\([0-7]{3})", lambda m: bytes([int(m.group(1), 8)]), f.read())
    if b"x * 10" not in saved:
        fail(f"history file lacks 'x * 10': {saved!r}")
    s = Session(binary, env)
    s.expect(r"tapestry> ", "second session")
    s.send("\x1b[A\x1b[A\r")  # up twice: past ":nosuch" to "string.upper('ab')"
    s.expect(r"\nAB\r?\n", "history recalled")
    s.send(":quit\r")
    code = s.wait_exit(":quit")
    if code != 0:
        fail(f":quit: exit status {code}, wanted 0")
    shutil.rmtree(home, ignore_errors=True)
    print("ok")


if __name__ == "__main__":
    main()
