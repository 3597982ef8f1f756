"""Quality: SPEC §5's metrics and a solve's report."""
