"""Analysis of a run's records: summaries, interval tables, fairness."""
