"""The model base every kind shares (dense, sparse, cross-encoder): device, names and paths, folders, prompts, routes."""
