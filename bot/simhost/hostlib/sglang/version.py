__version__ = "0.5.10"  # rewritten by build_sim_host
