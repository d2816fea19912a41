"""clusterforge: one typed inventory of a GPU cluster -> plan, render, deploy, validate."""

__version__ = "0.1.0"
