"""Replay gold queries through a searcher and score routing, retrieval and answers."""
