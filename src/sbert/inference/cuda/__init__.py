"""The GPU engine: FastBert's unpadded layers, CUDA graphs and the host/device pipeline."""
