"""A PostgreSQL server of a test's own: a database cluster made by initdb in a temporary folder,
its server listening on 127.0.0.1 at a free port, and one database for daqflow's run registry.
PostgreSQL refuses to run as root, so the cluster belongs to the `postgres` user, as Debian's
postgresql package makes it.

  with PostgresServer() as server:
      os.environ["DAQFLOW_RUNS_DB"] = server.uri
      ...

Everything it made (the server, the folder) is gone when the block ends."""

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import time

from daqflow_testlib import PORTS

USER = "postgres"


def _bin(name):
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    if not found:
        raise RuntimeError(f"PostgreSQL's {name} is not installed (scripts/bootstrap installs "
                           "Debian's postgresql)")
    return found[-1]


def _as_postgres(args, **kwargs):
    return subprocess.run(["runuser", "-u", USER, "--"] + args, check=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kwargs)


class PostgresServer:
    def __init__(self, database="daqflow_runs"):
        self.database = database
        self.dir = None
        self.proc = None
        self.port = None

    @property
    def uri(self):
        return self.uri_of(self.database)

    def uri_of(self, database):
        return f"postgresql://{USER}@127.0.0.1:{self.port}/{database}"

    def create_database(self, name):
        """A new, empty database on the server; its URI."""
        _as_postgres([_bin("createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", USER,
                      name])
        return self.uri_of(name)

    def __enter__(self):
        account = pwd.getpwnam(USER)
        self.dir = tempfile.mkdtemp(prefix="daqflow-pg-")
        os.chown(self.dir, account.pw_uid, account.pw_gid)
        data = os.path.join(self.dir, "data")
        try:
            _as_postgres([_bin("initdb"), "--pgdata", data, "--username", USER, "--auth", "trust",
                          "--no-sync", "--no-instructions"])
            self.port = PORTS.take(strict=True)
            log = open(os.path.join(self.dir, "server.log"), "w")
            self.proc = subprocess.Popen(
                ["runuser", "-u", USER, "--", _bin("postgres"), "-D", data, "-p", str(self.port),
                 "-c", "listen_addresses=127.0.0.1", "-c", f"unix_socket_directories={self.dir}",
                 "-c", "fsync=off"], stdout=log, stderr=subprocess.STDOUT)
            log.close()
            self._wait_ready()
            self.create_database(self.database)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _wait_ready(self, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("the PostgreSQL server exited: " + self.log())
            if subprocess.run([_bin("pg_isready"), "-q", "-h", "127.0.0.1", "-p",
                               str(self.port)]).returncode == 0:
                return
            time.sleep(0.1)
        raise RuntimeError(f"the PostgreSQL server did not answer within {timeout} s: " +
                           self.log())

    def log(self):
        try:
            with open(os.path.join(self.dir, "server.log")) as f:
                return f.read()
        except OSError:
            return ""

    def __exit__(self, *exc):
        if self.proc is not None and self.proc.poll() is None:
            # runuser passes the signal on; SIGINT is PostgreSQL's fast shutdown.
            self.proc.send_signal(2)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
        return False
