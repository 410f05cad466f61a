"""The Slurm executor: Slurm's own commands read the cluster and carry out plans."""

from alloc.adapters.slurm.executor import SlurmExecutor
from alloc.adapters.slurm.read import SlurmSite

__all__ = ["SlurmExecutor", "SlurmSite"]
