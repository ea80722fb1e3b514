"""The ground floor: errors, contracts, options, atomic files, output claims, batching and inputs; nothing of sbert above."""
