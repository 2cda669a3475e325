"""The runs of test_hosts (issue 15) with every host's executives started by its supervisord,
the per-host agent DAQling uses, through its XML-RPC API (the supervisor launcher): the event
builder across four namespace hosts over tcp, ucx and ofi, a controller killed and replaced with
--attach or ended by the lease, a BU host cut off, a BU restarted; and the programs daqflow added
removed at the end.
"""

import unittest
import xmlrpc.client

import test_hosts


class SupervisorHosts(test_hosts.SshHosts):
    """The same runs, each host's executives started by its supervisord (the per-host agent
    DAQling uses) through its XML-RPC API."""

    launcher = "supervisor"

    @classmethod
    def start_engine(cls):
        cls.supervisor_urls = cls.hosts.start_supervisord()

    def host_settings(self, i):
        return ""

    def supervisor_programs(self):
        """The programs in the daqflow group of every host's supervisord."""
        names = []
        for url in self.supervisor_urls:
            for info in xmlrpc.client.ServerProxy(url).supervisor.getAllProcessInfo():
                if info["group"] == "daqflow":
                    names.append(f"{url}: {info['name']} {info['statename']}")
        return names

    def test_the_event_builder_runs_across_four_hosts_over_tcp_ucx_and_ofi(self):
        super().test_the_event_builder_runs_across_four_hosts_over_tcp_ucx_and_ofi()
        self.assertEqual(self.supervisor_programs(), [], "programs removed at the end")

    def test_mpi_ranks_on_two_hosts(self):
        """mpirun starts the ranks (here, or over ssh): mpi contexts on supervisor hosts are refused
        at start, naming the context and the host."""
        code, out, summary = self.run_config(self.mpi_config(), "--duration", "2", timeout=180)
        self.assertEqual(code, 1, out)
        self.assertIn("context source uses the mpi transport, whose ranks mpirun starts (here, "
                      f"or over ssh); its host {self.hosts.addresses[0]} has launcher supervisor",
                      summary["failure"])


if __name__ == "__main__":
    unittest.main()
