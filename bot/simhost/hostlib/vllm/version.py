__version__ = "0.17.1"  # rewritten by build_sim_host
