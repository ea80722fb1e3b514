"""``sbert reproduce``: the paper's experiments as cached cells, and one report with our numbers beside the paper's."""
