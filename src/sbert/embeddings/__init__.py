"""What is done with sentence vectors once made: similarity, quantization, truncation, identity and exact search."""
