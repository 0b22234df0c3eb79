"""Generic population and Bayesian search engines (pymoo, Optuna)."""
