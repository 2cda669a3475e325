"""Hosts for tests made of Linux network namespaces (needs root).

NamespaceHosts(n) makes n hosts: a namespace each, joined to a bridge in the test's own namespace
by a veth pair, addresses 10.77.B.2 .. 10.77.B.(n+1) on a /24 of their own (the bridge, where
the controller runs, is 10.77.B.1; B is a block reserved with a lock file, so that test processes
running at the same time never share one). Each host can run an sshd (start_sshd) with a key
made for the test. cut(i) and restore(i) take a host's link down and up again. close() kills
every process left in the namespaces and removes the namespaces, the bridge and the files.

The namespaces share this machine's file systems: tests that mean to show that nothing needs a
shared file system use paths that only the host's processes write.
"""

import fcntl
import os
import shutil
import signal
import subprocess
import tempfile
import time

SUBNET_FIRST = 10  # 10.77.10.0/24 .. 10.77.59.0/24
SUBNET_COUNT = 50


def _run(*args, check=True):
    done = subprocess.run(list(args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: {done.stdout.decode(errors='replace').strip()}")
    return done


def available():
    """Why namespace hosts cannot be made here, or None when they can."""
    if os.geteuid() != 0:
        return "namespace hosts need root"
    for tool in ("ip", "nsenter"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    return None


class NamespaceHosts:
    def __init__(self, count):
        self.count = count
        self._lock = None
        self.block = self._reserve_block()
        self.tag = f"dqf{self.block}"
        self.bridge = f"{self.tag}br"
        self.gateway = f"10.77.{self.block}.1"
        self.names = [f"{self.tag}h{i}" for i in range(count)]
        self.addresses = [f"10.77.{self.block}.{i + 2}" for i in range(count)]
        self.dir = tempfile.mkdtemp(prefix=f"daqflow-hosts-{self.block}-")
        self._daemons = []
        try:
            self._make()
        except Exception:
            self.close()
            raise

    def _reserve_block(self):
        start = os.getpid() % SUBNET_COUNT
        for i in range(SUBNET_COUNT):
            block = SUBNET_FIRST + (start + i) % SUBNET_COUNT
            f = open(os.path.join(tempfile.gettempdir(), f"daqflow-test-subnet-{block}.lock"), "w")
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                f.close()
                continue
            self._lock = f
            return block
        raise RuntimeError("every 10.77.x.0/24 block of the namespace hosts is taken")

    def _make(self):
        # What an earlier test process of this block left behind (killed before its clean-up).
        self._remove_links()
        _run("ip", "link", "add", self.bridge, "type", "bridge")
        _run("ip", "addr", "add", f"{self.gateway}/24", "dev", self.bridge)
        _run("ip", "link", "set", self.bridge, "up")
        for i, (ns, address) in enumerate(zip(self.names, self.addresses)):
            outside, inside = f"{self.tag}v{i}", f"{self.tag}p{i}"
            _run("ip", "netns", "add", ns)
            _run("ip", "link", "add", outside, "type", "veth", "peer", "name", inside)
            _run("ip", "link", "set", inside, "netns", ns)
            _run("ip", "link", "set", outside, "master", self.bridge)
            _run("ip", "link", "set", outside, "up")
            _run("ip", "-n", ns, "link", "set", "lo", "up")
            _run("ip", "-n", ns, "addr", "add", f"{address}/24", "dev", inside)
            _run("ip", "-n", ns, "link", "set", inside, "up")
            _run("ip", "-n", ns, "route", "add", "default", "via", self.gateway)

    def _remove_links(self):
        for i, ns in enumerate(self.names):
            self._kill_in(ns)
            _run("ip", "netns", "del", ns, check=False)
            # A namespace lives on while a process killed in it has not exited yet, and its veth
            # with it: deleting the outer end deletes the pair at once.
            _run("ip", "link", "del", f"{self.tag}v{i}", check=False)
        _run("ip", "link", "del", self.bridge, check=False)

    @staticmethod
    def _kill_in(ns):
        done = _run("ip", "netns", "pids", ns, check=False)
        for pid in done.stdout.decode().split():
            try:
                os.kill(int(pid), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass

    def pids(self, i):
        """The processes running in host i."""
        done = _run("ip", "netns", "pids", self.names[i], check=False)
        return [int(p) for p in done.stdout.decode().split()]

    def command(self, i, args):
        """args run in host i's network namespace (nsenter: no remount of /sys, which slurmd
        needs to find its cgroups)."""
        return ["nsenter", f"--net=/run/netns/{self.names[i]}", "--"] + list(args)

    def cut(self, i):
        _run("ip", "-n", self.names[i], "link", "set", f"{self.tag}p{i}", "down")

    def restore(self, i):
        _run("ip", "-n", self.names[i], "link", "set", f"{self.tag}p{i}", "up")
        _run("ip", "-n", self.names[i], "route", "replace", "default", "via", self.gateway)

    # --- sshd ---

    def start_sshd(self):
        """An sshd on port 22 of every host, accepting a key made here for root; returns the ssh
        options a client needs (identity, no host key checks)."""
        os.makedirs("/run/sshd", exist_ok=True)
        key = os.path.join(self.dir, "id_ed25519")
        host_key = os.path.join(self.dir, "host_ed25519")
        for path in (key, host_key):
            _run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", path)
        authorized = os.path.join(self.dir, "authorized_keys")
        shutil.copy(key + ".pub", authorized)
        os.chmod(authorized, 0o600)
        sshd = shutil.which("sshd") or "/usr/sbin/sshd"
        for i, address in enumerate(self.addresses):
            config = os.path.join(self.dir, f"sshd_{i}.conf")
            with open(config, "w") as f:
                f.write(f"ListenAddress {address}\nPort 22\nHostKey {host_key}\n"
                        f"AuthorizedKeysFile {authorized}\nPermitRootLogin prohibit-password\n"
                        "PasswordAuthentication no\nKbdInteractiveAuthentication no\n"
                        "UsePAM no\nStrictModes no\nPidFile none\nLogLevel ERROR\n"
                        "ClientAliveInterval 2\nClientAliveCountMax 3\n")
            log = open(os.path.join(self.dir, f"sshd_{i}.log"), "w")
            # `ip netns exec`, which mounts the namespace's own /sys (UCX finds its network
            # devices there), and a UTS namespace: each host has its own name, as real hosts
            # do (UCX tells a peer on the same machine by it).
            command = ["ip", "netns", "exec", self.names[i], "unshare", "--uts", "sh", "-c",
                       f"hostname {self.names[i]} && exec {sshd} -D -e -f {config}"]
            proc = subprocess.Popen(command,
                                    stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
            log.close()
            self._daemons.append(proc)
        options = ["-i", key, "-o", "StrictHostKeyChecking=no", "-o",
                   "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR"]
        for address in self.addresses:
            self._wait_ssh(address, options)
        return options

    # --- supervisord ---

    SUPERVISOR_PORT = 9001

    def start_supervisord(self):
        """A supervisord on every host (Debian's, with supervisor_twiddler for programs added
        over XML-RPC), its XML-RPC server on ADDRESS:9001; returns the URLs."""
        urls = []
        for i, address in enumerate(self.addresses):
            base = os.path.join(self.dir, f"supervisor_{i}")
            os.makedirs(base, exist_ok=True)
            config = os.path.join(base, "supervisord.conf")
            with open(config, "w") as f:
                f.write(f"[supervisord]\nnodaemon = true\nlogfile = {base}/supervisord.log\n"
                        f"pidfile = {base}/supervisord.pid\nchildlogdir = {base}\n"
                        "loglevel = info\n"
                        f"[inet_http_server]\nport = {address}:{self.SUPERVISOR_PORT}\n"
                        "[rpcinterface:supervisor]\nsupervisor.rpcinterface_factory = "
                        "supervisor.rpcinterface:make_main_rpcinterface\n"
                        "[rpcinterface:twiddler]\nsupervisor.rpcinterface_factory = "
                        "supervisor_twiddler.rpcinterface:make_twiddler_rpcinterface\n"
                        "[group:daqflow]\nprograms =\n")
            log = open(os.path.join(base, "stdout.log"), "w")
            command = ["ip", "netns", "exec", self.names[i], "unshare", "--uts", "sh", "-c",
                       f"hostname {self.names[i]} && exec /usr/bin/python3 -m supervisor.supervisord "
                       f"-c {config}"]
            proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                    start_new_session=True)
            log.close()
            self._daemons.append(proc)
            urls.append(f"http://{address}:{self.SUPERVISOR_PORT}/RPC2")
        import xmlrpc.client
        for url in urls:
            deadline = time.monotonic() + 30.0
            while True:
                try:
                    if xmlrpc.client.ServerProxy(url).supervisor.getState()["statename"] == \
                            "RUNNING":
                        break
                except OSError:
                    pass
                if time.monotonic() >= deadline:
                    raise RuntimeError(f"supervisord at {url} did not answer within 30 s")
                time.sleep(0.2)
        return urls

    # --- Slurm ---

    def start_slurm(self):
        """munged, a slurmctld on the bridge address and a slurmd on every host (node names as
        the namespaces); returns the path of slurm.conf (for SLURM_CONF). slurmd runs under
        nsenter --net (ip netns exec would hide the cgroup file systems it needs), in a mount
        namespace of its own with the host's /sys mounted over, the cgroups bound back in (UCX
        finds the host's network devices there), and its own host name. SLURM_CONF is set in
        this process's environment, for srun, sinfo and the processes it starts."""
        import socket
        base = os.path.join(self.dir, "slurm")
        os.makedirs(os.path.join(base, "state"), exist_ok=True)
        key = os.path.join(base, "munge.key")
        _run("mungekey", "--create", "--force", "--keyfile", key)
        os.chmod(key, 0o600)
        munge_socket = os.path.join(base, "munge.sock")
        log = open(os.path.join(base, "munged.out"), "w")
        self._daemons.append(subprocess.Popen(
            ["munged", "--foreground", "--force", "--key-file", key, "--socket", munge_socket,
             "--pid-file", os.path.join(base, "munged.pid"), "--log-file",
             os.path.join(base, "munged.log"), "--seed-file", os.path.join(base, "munge.seed")],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
        log.close()
        port = 6817 + 2 * self.block  # slurmctld; slurmd the next one
        nodes = "".join(f"NodeName={n} NodeAddr={a} CPUs=2 State=UNKNOWN\n"
                        for n, a in zip(self.names, self.addresses))
        conf = os.path.join(base, "slurm.conf")
        with open(conf, "w") as f:
            f.write(f"ClusterName=dqf{self.block}\nSlurmctldHost={socket.gethostname()}"
                    f"({self.gateway})\nSlurmctldPort={port}\nSlurmdPort={port + 1}\n"
                    f"AuthType=auth/munge\nAuthInfo=socket={munge_socket}\n"
                    "SlurmUser=root\nSlurmdUser=root\nMailProg=/bin/true\n"
                    f"StateSaveLocation={base}/state\nSlurmdSpoolDir={base}/spool_%n\n"
                    f"SlurmctldPidFile={base}/slurmctld.pid\nSlurmdPidFile={base}/slurmd_%n.pid\n"
                    f"SlurmctldLogFile={base}/slurmctld.log\nSlurmdLogFile={base}/slurmd_%n.log\n"
                    "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n"
                    "JobAcctGatherType=jobacct_gather/none\nMpiDefault=none\n"
                    "SchedulerType=sched/backfill\nSchedulerParameters=bf_interval=1\n"
                    "SelectType=select/cons_tres\nSelectTypeParameters=CR_Core\n"
                    "ReturnToService=2\n" + nodes +
                    "PartitionName=daq Nodes=ALL Default=YES MaxTime=INFINITE State=UP "
                    "OverSubscribe=FORCE:4\n")
        os.environ["SLURM_CONF"] = conf
        env = dict(os.environ)
        log = open(os.path.join(base, "slurmctld.out"), "w")
        self._daemons.append(subprocess.Popen(["slurmctld", "-D", "-i", "-f", conf], env=env,
                                              stdout=log, stderr=subprocess.STDOUT,
                                              start_new_session=True))
        log.close()
        for i, name in enumerate(self.names):
            sys_dir = os.path.join(base, f"sys_{name}")
            os.makedirs(sys_dir, exist_ok=True)
            script = (f"hostname {name} && mount -t sysfs sysfs {sys_dir} && "
                      f"mount --rbind /sys/fs/cgroup {sys_dir}/fs/cgroup && "
                      f"mount --rbind {sys_dir} /sys && exec slurmd -D -N {name} -f {conf}")
            log = open(os.path.join(base, f"slurmd_{name}.out"), "w")
            self._daemons.append(subprocess.Popen(
                self.command(i, ["unshare", "--mount", "--uts", "sh", "-c", script]), env=env,
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
            log.close()
        deadline = time.monotonic() + 60.0
        while True:
            done = _run("sinfo", "-h", "-o", "%T %D", check=False)
            states = done.stdout.decode(errors="replace").split()
            if done.returncode == 0 and states[:1] == ["idle"] and \
                    states[1:2] == [str(self.count)]:
                return conf
            if time.monotonic() >= deadline:
                raise RuntimeError(f"Slurm did not come up within 60 s: sinfo says "
                                   f"{done.stdout.decode(errors='replace').strip()}")
            time.sleep(0.3)

    def _wait_ssh(self, address, options, timeout=30.0):
        deadline = time.monotonic() + timeout
        while True:
            done = _run("ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=5", *options,
                        f"root@{address}", "true", check=False)
            if done.returncode == 0:
                return
            if time.monotonic() >= deadline:
                raise RuntimeError(f"sshd on {address} did not answer within {timeout} s: "
                                   f"{done.stdout.decode(errors='replace').strip()}")
            time.sleep(0.2)

    def close(self):
        for proc in self._daemons:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
        self._daemons = []
        self._remove_links()
        shutil.rmtree(self.dir, ignore_errors=True)
        if self._lock is not None:
            self._lock.close()
            self._lock = None
