"""The runs of test_hosts (issue 15) with every executive a Slurm job on its host's node, started
with srun (the slurm launcher): slurmctld, munged and a slurmd per namespace host made by the
fixture. The event builder across four hosts over tcp, ucx and ofi, a controller killed and
replaced with --attach or ended by the lease, a BU host cut off, a BU restarted; and no daqflow
job left in Slurm at the end.
"""

import subprocess
import unittest

import test_hosts


class SlurmHosts(test_hosts.SshHosts):
    """The same runs, each executive a job of one task placed by srun."""

    launcher = "slurm"

    @classmethod
    def start_engine(cls):
        cls.slurm_conf = cls.hosts.start_slurm()

    def host_settings(self, i):
        return f"    slurm: {{node: {self.hosts.names[i]}}}\n"

    def executives_left(self):
        return [p for p in super().executives_left() if "slurm" not in p]

    def daqflow_jobs(self):
        done = subprocess.run(["squeue", "-h", "-o", "%j %T"], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, check=True)
        return [line for line in done.stdout.decode().splitlines() if line.startswith("daqflow")]

    def test_the_event_builder_runs_across_four_hosts_over_tcp_ucx_and_ofi(self):
        super().test_the_event_builder_runs_across_four_hosts_over_tcp_ucx_and_ofi()
        self.assertEqual(self.daqflow_jobs(), [], "every job ended")

    def test_mpi_ranks_on_two_hosts(self):
        """mpirun starts the ranks (here, or over ssh): mpi contexts on slurm hosts are refused
        at start, naming the context and the host."""
        code, out, summary = self.run_config(self.mpi_config(), "--duration", "2", timeout=180)
        self.assertEqual(code, 1, out)
        self.assertIn("context source uses the mpi transport, whose ranks mpirun starts (here, "
                      f"or over ssh); its host {self.hosts.addresses[0]} has launcher slurm",
                      summary["failure"])


if __name__ == "__main__":
    unittest.main()
