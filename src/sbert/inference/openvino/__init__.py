"""The OpenVINO engine: compiled graphs for the CPU, their cache and the runtime that runs them."""
