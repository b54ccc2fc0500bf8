"""The reference interpreter for levels G, S and T, and the simulated machine (to come)."""
