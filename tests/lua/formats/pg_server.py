#!/usr/bin/env python3
"""A throwaway PostgreSQL server for the tests of postgresql:// databases (postgres.lua).

    pg_server.py start DIR URLFILE     initdb in DIR/pg, start on 127.0.0.1 at a free port, write
                                       the URL to URLFILE; exit 77 when no server binaries exist
    pg_server.py stop DIR              stop it

The cluster trusts local connections (user "tapestry"). PostgreSQL refuses to run as root, so
under root the server runs as the user "nobody"."""
import glob
import os
import pwd
import socket
import subprocess
import sys

action, top = sys.argv[1], sys.argv[2]
data = os.path.join(top, "pg")
bins = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
if not bins:
    print("postgres: no server binaries (/usr/lib/postgresql/*/bin); skipped")
    sys.exit(77)
bindir = os.path.dirname(bins[-1])


def run(*cmd):
    if os.geteuid() == 0:
        cmd = ("runuser", "-u", "nobody", "--") + cmd
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)


if action == "stop":
    run(os.path.join(bindir, "pg_ctl"), "-D", data, "-m", "immediate", "stop")
    sys.exit(0)

os.makedirs(data, mode=0o700)
if os.geteuid() == 0:
    nobody = pwd.getpwnam("nobody")
    os.chown(data, nobody.pw_uid, nobody.pw_gid)
with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
run(os.path.join(bindir, "initdb"), "-D", data, "-U", "tapestry", "--auth=trust", "-E", "UTF8")
run(os.path.join(bindir, "pg_ctl"), "-D", data, "-w", "-l", os.path.join(data, "log"), "-o",
    "-h 127.0.0.1 -p %d -k %s" % (port, data), "start")
with open(sys.argv[3], "w") as f:
    f.write("postgresql://tapestry@127.0.0.1:%d/postgres" % port)
